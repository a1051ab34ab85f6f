"""``ReplayMemory``: PARL's fixed-size, uniformly sampled experience buffer, for any observation shape."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from parl_core.utils.atomic import atomic_write

__all__ = ["ReplayMemory"]

MEMORY_FORMAT = "parl-replay-memory-v1"
"""The ``format`` entry :meth:`ReplayMemory.save` writes; files without it (PARL 2.x, parl-core 3.0) load too."""

_FIELDS = ("obs", "action", "reward", "next_obs", "terminal")


def _shape(dim: int | tuple[int, ...] | list[int], name: str) -> tuple[int, ...]:
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        if dim < 0:
            raise ValueError(f"{name} must be >= 0, got {dim}")
        return (int(dim),)
    if isinstance(dim, (tuple, list)) and all(isinstance(d, (int, np.integer)) and d > 0 for d in dim):
        return tuple(int(d) for d in dim)
    raise TypeError(f"{name} must be an int or a tuple of positive ints (e.g. {name}=4 or (84, 84, 4)), got {dim!r}")


class ReplayMemory:
    """A ring buffer of transitions ``(obs, action, reward, next_obs, terminal)`` with uniform sampling.

    PARL-compatible (``ReplayMemory(max_size, obs_dim, act_dim)``, ``append``, ``sample_batch``,
    ``make_index``, ``sample_batch_by_index``, ``size``, ``save``, ``load``, ``load_from_d4rl``; ``extend``
    adds a batch of transitions, e.g. from a vector env), but
    observations may have any shape and dtype (e.g. ``obs_dim=(84, 84, 4), obs_dtype=np.uint8`` for
    Atari), appended data is shape-checked, and sampling uses a seedable ``np.random.Generator``.

    Args:
        max_size: capacity in transitions; the oldest is overwritten when full.
        obs_dim: observation shape: an int for vectors or a tuple.
        act_dim: 0 for discrete actions (stored int32 ``[max_size]``), else the action vector length
            (float32 ``[max_size, act_dim]``) or a tuple shape.
        obs_dtype: dtype of stored observations (default float32).
        seed: seed of the sampling generator (``None``: fresh entropy).

    Raises:
        ValueError / TypeError: non-positive ``max_size`` or malformed dims.
    """

    def __init__(self, max_size: int, obs_dim: int | tuple[int, ...], act_dim: int | tuple[int, ...], *,
                 obs_dtype: Any = np.float32, seed: int | None = None) -> None:
        if not isinstance(max_size, (int, np.integer)) or isinstance(max_size, bool) or max_size <= 0:
            raise ValueError(f"max_size must be a positive int, got {max_size!r}")
        self.max_size = int(max_size)
        self.obs_shape = _shape(obs_dim, "obs_dim")
        if self.obs_shape == (0,):
            raise ValueError("obs_dim must be positive")
        act_shape = _shape(act_dim, "act_dim")
        self.obs_dim = obs_dim
        self.act_dim = act_dim
        self.act_shape: tuple[int, ...] = () if act_shape == (0,) else act_shape
        self.obs_dtype = np.dtype(obs_dtype)
        self.obs = np.zeros((self.max_size, *self.obs_shape), dtype=self.obs_dtype)
        self.next_obs = np.zeros_like(self.obs)
        self.action = np.zeros((self.max_size, *self.act_shape),
                               dtype=np.int32 if not self.act_shape else np.float32)
        self.reward = np.zeros((self.max_size,), dtype=np.float32)
        self.terminal = np.zeros((self.max_size,), dtype=np.bool_)
        self._curr_size = 0
        self._curr_pos = 0
        self.rng = np.random.default_rng(seed)

    # -- filling ---------------------------------------------------------------------------------
    @staticmethod
    def _check(value: Any, shape: tuple[int, ...], name: str, method: str = "append", hint: str = "") -> np.ndarray:
        array = np.asarray(value)
        if array.shape != shape:
            raise ValueError(f"ReplayMemory.{method}: {name} has shape {array.shape}, expected {shape}; "
                             f"{hint or 'append one transition at a time'}, shaped as obs_dim / act_dim given to "
                             "ReplayMemory")
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
            raise TypeError(f"ReplayMemory.{method}: {name} must be numeric, got dtype {array.dtype}")
        return array

    def append(self, obs: Any, act: Any, reward: float, next_obs: Any, terminal: bool) -> None:
        """Store one transition, overwriting the oldest when full.

        Args:
            obs: ``[*obs_shape]``; act: ``[]`` (discrete) or ``[act_dim]``; reward: scalar;
            next_obs: ``[*obs_shape]``; terminal: scalar bool (true terminal, not time-limit truncation).

        Raises:
            ValueError: a shape differs from the buffer's (e.g. a batch passed instead of one step).
            TypeError: non-numeric data.
        """
        pos = self._curr_pos
        self.obs[pos] = self._check(obs, self.obs_shape, "obs")
        self.action[pos] = self._check(act, self.act_shape, "act")
        self.reward[pos] = self._check(reward, (), "reward")
        self.next_obs[pos] = self._check(next_obs, self.obs_shape, "next_obs")
        self.terminal[pos] = self._check(terminal, (), "terminal")
        self._curr_pos = (pos + 1) % self.max_size
        self._curr_size = min(self._curr_size + 1, self.max_size)

    def extend(self, obs: Any, act: Any, reward: Any, next_obs: Any, terminal: Any) -> None:
        """Store a batch of ``N`` transitions at once (e.g. one step of a vector env), oldest first.

        Equivalent to ``append`` on each transition in order, in one vectorised copy per field (with
        wrap-around; when ``N > max_size`` only the last ``max_size`` are kept).

        Args:
            obs: ``[N, *obs_shape]``; act: ``[N]`` (discrete) or ``[N, act_dim]``; reward: ``[N]``;
            next_obs: ``[N, *obs_shape]``; terminal: bool ``[N]``.

        Raises:
            ValueError: a field is not shaped ``[N, ...]`` with the buffer's per-transition shape, or the
                fields disagree on ``N``.
            TypeError: non-numeric data.
        """
        obs = np.asarray(obs)
        if obs.ndim != len(self.obs_shape) + 1:
            raise ValueError(f"ReplayMemory.extend: obs has shape {obs.shape}, expected [N, *{self.obs_shape}]; "
                             "use append() for a single transition")
        n = obs.shape[0]
        hint = f"pass [N, ...] arrays with N={n} (from obs)"
        fields = [self._check(value, (n, *shape), name, "extend", hint) for value, shape, name in (
            (obs, self.obs_shape, "obs"), (act, self.act_shape, "act"), (reward, (), "reward"),
            (next_obs, self.obs_shape, "next_obs"), (terminal, (), "terminal"))]
        skip = max(n - self.max_size, 0)  # transitions overwritten within this batch are not written
        if skip:
            fields = [f[skip:] for f in fields]
        pos = self._curr_pos
        first, kept = pos + skip, n - skip
        idx = (first + np.arange(kept)) % self.max_size if first + kept > self.max_size else slice(first, first + kept)
        for store, value in zip((self.obs, self.action, self.reward, self.next_obs, self.terminal), fields,
                                strict=True):
            store[idx] = value
        self._curr_pos = (pos + n) % self.max_size
        self._curr_size = min(self._curr_size + n, self.max_size)

    # -- sampling --------------------------------------------------------------------------------
    def make_index(self, batch_size: int) -> np.ndarray:
        """Uniform random indices (with replacement) into the stored transitions: int64 ``[batch_size]``.

        Raises:
            ValueError: the memory is empty or ``batch_size`` < 1.
        """
        if self._curr_size == 0:
            raise ValueError("ReplayMemory is empty; append transitions before sampling")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        return self.rng.integers(0, self._curr_size, size=batch_size)

    def sample_batch_by_index(self, batch_idx: Any) -> tuple[np.ndarray, ...]:
        """Return ``(obs, action, reward, next_obs, terminal)`` at the given indices.

        Returns:
            obs ``[N, *obs_shape]`` obs_dtype, action int32 ``[N]`` or float32 ``[N, act_dim]``, reward
            float32 ``[N]``, next_obs like obs, terminal bool ``[N]``.
        """
        batch_idx = np.asarray(batch_idx)
        return (self.obs[batch_idx], self.action[batch_idx], self.reward[batch_idx], self.next_obs[batch_idx],
                self.terminal[batch_idx])

    def sample_batch(self, batch_size: int) -> tuple[np.ndarray, ...]:
        """Sample ``batch_size`` transitions uniformly with replacement (see :meth:`sample_batch_by_index`)."""
        return self.sample_batch_by_index(self.make_index(batch_size))

    def size(self) -> int:
        """Number of stored transitions."""
        return self._curr_size

    def __len__(self) -> int:
        return self._curr_size

    # -- persistence -----------------------------------------------------------------------------
    def save(self, pathname: str | os.PathLike) -> None:
        """Write the stored transitions to an ``.npz`` file (``.npz`` is appended when missing, as numpy does).

        The file holds ``obs``, ``action``, ``reward``, ``next_obs``, ``terminal`` (the ``size()`` stored
        transitions, oldest slot first), ``other`` (int64 ``[size, position]``) and ``format``
        (:data:`MEMORY_FORMAT`). Crash-safe: it is written under a temporary name in the same folder and
        renamed into place (:func:`parl_core.utils.atomic.atomic_write`), so a process killed during the
        save leaves the previous file or the new one, whole; temporary files of a killed save are deleted
        by the next save. Parent directories are created.

        Raises:
            OSError: the file cannot be written (an earlier file at the path is then untouched).
        """
        n = self._curr_size
        path = os.fspath(pathname)
        if not path.endswith(".npz"):
            path += ".npz"
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with atomic_write(path) as file:
            np.savez(file, obs=self.obs[:n], action=self.action[:n], reward=self.reward[:n],
                     next_obs=self.next_obs[:n], terminal=self.terminal[:n],
                     other=np.array([self._curr_size, self._curr_pos], dtype=np.int64),
                     format=np.asarray(MEMORY_FORMAT))

    def load(self, pathname: str | os.PathLike) -> None:
        """Replace the contents with a file written by :meth:`save` (or PARL's ``ReplayMemory.save``).

        The file is read with ``allow_pickle=False`` (no code in it runs). A refused file leaves the memory
        exactly as it was.

        Raises:
            FileNotFoundError: neither ``pathname`` nor ``pathname + ".npz"`` exists.
            ValueError: the file is empty, truncated, corrupt or not an ``.npz`` file; it lacks an array
                ``save`` writes or is of another format version; its shapes differ from this memory's, or
                it holds more transitions than ``max_size``. The message names the file, what is wrong and
                what to do.
        """
        path = os.fspath(pathname)
        if not os.path.isfile(path) and os.path.isfile(path + ".npz"):
            path = path + ".npz"
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no replay memory file at {os.fspath(pathname)!r}; write one with "
                                    "ReplayMemory.save(path)")
        arrays, other = _read_memory_file(path)
        self._load_arrays(arrays, source=path, other=other)

    def state_dict(self) -> dict[str, Any]:
        """Everything an exact resume needs: the ``size()`` stored transitions (arrays as in :meth:`save`),
        ``size``, ``position`` and the sampling generator's state (``rng``, a dict of plain values)."""
        n = self._curr_size
        return {"obs": self.obs[:n].copy(), "action": self.action[:n].copy(), "reward": self.reward[:n].copy(),
                "next_obs": self.next_obs[:n].copy(), "terminal": self.terminal[:n].copy(),
                "size": n, "position": self._curr_pos, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a :meth:`state_dict`: transitions, write position and sampling generator.

        Raises:
            KeyError: an entry of :meth:`state_dict` is missing.
            ValueError: the arrays do not fit this memory (see :meth:`load`).
        """
        self._load_arrays(state, source="the replay memory state")
        self._curr_pos = int(state["position"]) % self.max_size
        self.rng.bit_generator.state = state["rng"]

    def _load_arrays(self, arrays: Mapping[str, np.ndarray], source: str, other: Any = None) -> None:
        n = len(arrays["reward"])
        expected = {"obs": (n, *self.obs_shape), "action": (n, *self.act_shape), "reward": (n,),
                    "next_obs": (n, *self.obs_shape), "terminal": (n,)}
        bad = [f"{k} {np.shape(arrays[k])} (expected {shape})" for k, shape in expected.items()
               if np.shape(arrays[k]) != shape]
        if bad:
            raise ValueError(f"{source} does not fit this ReplayMemory(obs_dim={self.obs_dim}, "
                             f"act_dim={self.act_dim}): {', '.join(bad)}; create the memory with the dims it was "
                             "saved with")
        if n > self.max_size:
            raise ValueError(f"{source} holds {n} transitions, more than max_size={self.max_size}; create the "
                             f"memory with max_size >= {n}")
        for key in expected:
            getattr(self, key)[:n] = arrays[key]
        self._curr_size = n
        pos = int(other[1]) if other is not None and n == self.max_size else n
        self._curr_pos = pos % self.max_size

    def load_from_d4rl(self, dataset: Mapping[str, np.ndarray]) -> None:
        """Fill the memory from a D4RL-style dict (``observations``, ``actions``, ``rewards``,
        ``next_observations``, ``terminals``), as PARL's offline examples do.

        Raises:
            KeyError: a key is missing. ValueError: shapes do not fit (see :meth:`load`).
        """
        missing = [k for k in ("observations", "actions", "rewards", "next_observations", "terminals")
                   if k not in dataset]
        if missing:
            raise KeyError(f"load_from_d4rl: the dataset lacks {missing}")
        self._load_arrays({"obs": dataset["observations"], "action": dataset["actions"],
                           "reward": np.asarray(dataset["rewards"]).reshape(-1),
                           "next_obs": dataset["next_observations"],
                           "terminal": np.asarray(dataset["terminals"]).reshape(-1)}, source="the d4rl dataset")


def _read_memory_file(path: str) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """The arrays of a :meth:`ReplayMemory.save` file, or a ``ValueError`` naming ``path`` and the problem."""
    fix = "load an earlier copy, or refill the memory and save it again"
    if os.path.getsize(path) == 0:
        raise ValueError(f"cannot load replay memory {path!r}: the file is empty (0 bytes; a copy or save that "
                         f"stopped before writing, or a full disk); {fix}")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise _NotNpz
        with data:
            missing = [k for k in _FIELDS if k not in data.files]
            found = str(data["format"]) if "format" in data.files else None
            if missing or (found is not None and found != MEMORY_FORMAT):
                arrays, other = {}, None
            else:
                arrays = {k: data[k] for k in _FIELDS}
                other = data["other"] if "other" in data.files else None
    except _NotNpz:
        raise ValueError(f"cannot load replay memory {path!r}: it holds a single numpy array (.npy), not the .npz "
                         f"archive ReplayMemory.save writes; {fix}") from None
    except Exception:  # numpy / zipfile errors are described here in words (truncated, not a zip, bad CRC)
        with open(path, "rb") as file:
            head = file.read(4)
        what = ("it is truncated or corrupt (it starts like an .npz archive but does not read to its end)"
                if head == b"PK\x03\x04" else f"it is not an .npz archive (its first bytes are {head!r})")
        raise ValueError(f"cannot load replay memory {path!r}: {what}; {fix}") from None
    if missing:
        raise ValueError(f"cannot load replay memory {path!r}: it lacks the arrays {missing}, so it was not written "
                         f"by ReplayMemory.save; load a file ReplayMemory.save wrote")
    if found is not None and found != MEMORY_FORMAT:
        raise ValueError(f"cannot load replay memory {path!r}: it is in format {found!r}, this parl-core reads "
                         f"{MEMORY_FORMAT!r}; load it with the parl-core version that wrote it (or a newer one)")
    return arrays, other


class _NotNpz(Exception):
    pass
