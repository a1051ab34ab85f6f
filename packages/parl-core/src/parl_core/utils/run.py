"""A training run's harness: its log folder (:class:`RunLog`) and its checkpoints (:class:`Checkpointer`).

A run killed at any moment (``kill -9``, a pre-empted job, Ctrl-C) and continued with ``--resume DIR``
finishes as the uninterrupted run of the same seed would have, bit for bit, when the example registers
everything its future depends on::

    run = RunLog(logdir)                                   # curve.csv, tensorboard, summary.json, wall clock
    ckpt = Checkpointer(run, every_min=10, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, memory=memory, rng=rng, env=env)    # restored in place on resume
    c = ckpt.track(step=0, ep_return=0.0, obs=None)        # the loop's counters (a SimpleNamespace)
    ckpt.start()                                           # loads the checkpoint; SIGTERM / SIGINT handlers
    while c.step < total:
        ...                                                # one step: c.step += 1, run.row(...), run.scalar(...)
        ckpt.maybe_save(c.step)                            # a point where the registered state is consistent
    run.write_summary(result); ckpt.finish(c.step)

Folder layout (``logdir``): ``checkpoint.npz`` (one file, replaced whole by each save:
:func:`parl_core.utils.atomic.atomic_write`), ``curve.csv``, ``summary.json``, tensorboard event files.

What a checkpoint holds: every registered object's state (``state_dict()`` of algorithms, models, optimizers,
``ReplayMemory``, ``LinearDecayScheduler`` / ``PiecewiseScheduler``; the state of ``np.random.Generator`` and
``random.Random`` objects; gymnasium envs, see :func:`env_state`), the tracked counters, the process-wide
RNGs (``random``, numpy's global one, torch's CPU and CUDA generators when torch is imported, paddle's when
paddle is), the curve's length and the wall clock so far, and the run's settings (``config``: resuming with
other settings is refused). It is a numpy ``.npz`` read with ``allow_pickle=False``; its structure is JSON:
loading it runs no code from the file.

Limits: bit-exactness needs the same software versions, device and thread counts as the first part of the
run; wall-clock fields (``wall_s``) differ. Asynchronous (multi-process) sampling is not covered.

Importing this module has no side effects; :meth:`Checkpointer.start` installs the signal handlers and
:meth:`Checkpointer.close` (or :meth:`Checkpointer.finish`) puts the previous ones back.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import types
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from parl_core.utils import logger, summary
from parl_core.utils.atomic import atomic_write
from parl_core.utils.stats import CSVLogger

__all__ = ["CHECKPOINT_FILE", "CheckpointError", "Checkpointer", "RunFinished", "RunLog", "add_run_args", "env_state",
           "load_env_state", "read_checkpoint", "rng_state", "load_rng_state"]

CHECKPOINT_FILE = "checkpoint.npz"
SUMMARY_FILE = "summary.json"
CURVE_FILE = "curve.csv"
FORMAT = "parl-run-checkpoint/1"
STANDARD_FIELDS = ("eval_return_mean", "eval_episodes", "env_steps")
#: settings that may differ between a run and its resumption (where to write, how often to checkpoint, ...)
VOLATILE_SETTINGS = frozenset({"resume", "logdir", "checkpoint_every", "no_progress", "device"})


class CheckpointError(RuntimeError):
    """A checkpoint is missing, damaged, or belongs to another run; the message names the file and the fix."""


class RunFinished(SystemExit):
    """``--resume`` of a run that has finished: nothing to do (exit status 0; its summary.json stands)."""


def add_run_args(parser: argparse.ArgumentParser, every_min: float = 10.0) -> None:
    """Add ``--resume DIR`` and ``--checkpoint-every MIN`` to an example's command line.

    Args:
        parser: the example's parser.
        every_min: the default checkpoint interval in minutes.
    """
    parser.add_argument("--resume", metavar="DIR", default=None,
                        help="continue the run whose log folder is DIR from its checkpoint (same settings)")
    parser.add_argument("--checkpoint-every", type=float, default=every_min, metavar="MIN",
                        help=f"save a checkpoint every MIN minutes (0: only on SIGTERM / Ctrl-C and at the end) "
                             f"[default: {every_min:g}]")


# -- the run's log folder ----------------------------------------------------------------------------
class RunLog:
    """Owns a run's log folder: ``curve.csv`` rows, tensorboard scalars, ``summary.json`` and the wall clock.

    Args:
        logdir: the folder (created). Tensorboard events go there too (:func:`parl_core.utils.summary.set_logdir`).

    ``curve.csv`` is created on the first :meth:`row` (a fresh run overwrites an earlier file); after
    :meth:`load_state_dict` (a resume) it keeps the rows written up to the checkpoint and drops later ones, and
    tensorboard drops the later events (``purge_step``).
    """

    def __init__(self, logdir: str | os.PathLike) -> None:
        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        summary.set_logdir(self.logdir)
        self.curve_path = os.path.join(self.logdir, CURVE_FILE)
        self._curve: CSVLogger | None = None
        self._resume_at: int | None = None
        self._start = time.perf_counter()
        self._wall_before = 0.0

    def elapsed(self) -> float:
        """Wall-clock seconds of the run so far, earlier parts of a resumed run included."""
        return self._wall_before + time.perf_counter() - self._start

    def row(self, values: Mapping[str, Any]) -> None:
        """Append one row to ``curve.csv`` and flush it (the first row of a fresh run sets the columns).

        Raises:
            ValueError: the keys differ from the file's columns.
        """
        if self._curve is None:
            self._curve = CSVLogger(self.curve_path, resume_at=self._resume_at)
        self._curve.log_dict(values)
        self._curve.flush()

    def scalar(self, tag: str, value: float, step: int) -> None:
        """One tensorboard scalar (``summary.add_scalar``); ``step`` in the run's x unit (env steps)."""
        summary.add_scalar(tag, value, step)

    def write_summary(self, result: dict[str, Any]) -> dict[str, Any]:
        """Write ``summary.json`` whole (atomic) and return it; ``wall_s`` is added when missing.

        Args:
            result: JSON-serialisable; must hold ``eval_return_mean``, ``eval_episodes`` and ``env_steps``.

        Raises:
            ValueError: a standard field is missing.
        """
        missing = [k for k in STANDARD_FIELDS if k not in result]
        if missing:
            raise ValueError(f"summary.json needs the fields {missing}; add them to the result")
        result.setdefault("wall_s", round(self.elapsed(), 3))
        with atomic_write(os.path.join(self.logdir, SUMMARY_FILE), "w") as f:
            json.dump(result, f, indent=2)
        return result

    def flush(self) -> None:
        """Write the curve rows and tensorboard events so far to disk."""
        if self._curve is not None:
            self._curve.flush()
        summary.flush()

    def close(self) -> None:
        """Close ``curve.csv`` (a later :meth:`row` appends to it) and flush tensorboard."""
        if self._curve is not None:
            self._resume_at = self._curve.position()
            self._curve.close()
            self._curve = None
        summary.flush()

    def state_dict(self) -> dict[str, Any]:
        """``{"curve_bytes": int, "wall_s": float}``: where the curve ends and the wall clock so far."""
        if self._curve is not None:
            size = self._curve.position()
        else:
            size = self._resume_at or 0
        return {"curve_bytes": size, "wall_s": self.elapsed()}

    def load_state_dict(self, state: Mapping[str, Any], purge_step: int | None = None) -> None:
        """Continue after a checkpoint: cut ``curve.csv`` back to it, continue the clock, purge later events.

        Raises:
            ValueError: ``curve.csv`` is shorter than at the checkpoint.
        """
        self._resume_at = int(state["curve_bytes"])
        self._wall_before = float(state["wall_s"])
        self._start = time.perf_counter()
        if self._curve is not None:
            self._curve.close()
            self._curve = None
        if self._resume_at:
            self._curve = CSVLogger(self.curve_path, resume_at=self._resume_at)
        summary.set_logdir(self.logdir, purge_step=purge_step)


# -- RNG and env states -------------------------------------------------------------------------------
def _generator_state(gen: np.random.Generator) -> dict[str, Any]:
    return {"bit_generator": type(gen.bit_generator).__name__, "state": gen.bit_generator.state}


def _load_generator(gen: np.random.Generator | None, state: Mapping[str, Any]) -> np.random.Generator:
    if gen is None or type(gen.bit_generator).__name__ != state["bit_generator"]:
        gen = np.random.Generator(getattr(np.random, state["bit_generator"])())
    gen.bit_generator.state = dict(state["state"])
    return gen


def rng_state() -> dict[str, Any]:
    """The process-wide RNG states: ``random``, numpy's global RNG, torch's CPU / CUDA and paddle's generators
    (the last two only where the framework is imported)."""
    state: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state()}
    torch = sys.modules.get("torch")
    if torch is not None:
        state["torch"] = torch.get_rng_state()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["torch_cuda"] = torch.cuda.get_rng_state_all()
    paddle = sys.modules.get("paddle")
    if paddle is not None and hasattr(paddle, "get_rng_state"):
        state["paddle"] = [s.__getstate__() for s in paddle.get_rng_state()]
        if paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count():
            state["paddle_cuda"] = [s.__getstate__() for s in paddle.get_cuda_rng_state()]
    return state


def load_rng_state(state: Mapping[str, Any]) -> None:
    """Set the process-wide RNGs to :func:`rng_state`'s ``state`` (entries of frameworks not imported are skipped)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys, pos, has_gauss, cached))
    torch = sys.modules.get("torch")
    if torch is not None and "torch" in state:
        torch.set_rng_state(state["torch"])
        if "torch_cuda" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["torch_cuda"])
    paddle = sys.modules.get("paddle")
    if paddle is not None and "paddle" in state:
        def states(saved):
            cls = type(paddle.get_rng_state()[0])
            out = []
            for s in saved:
                obj = cls.__new__(cls)
                obj.__setstate__(tuple(s))
                out.append(obj)
            return out
        paddle.set_rng_state(states(state["paddle"]))
        if "paddle_cuda" in state:
            paddle.set_cuda_rng_state(states(state["paddle_cuda"]))


_SPACE_ATTRS = ("action_space", "observation_space", "single_action_space", "single_observation_space")
_SKIP_ATTRS = frozenset({"_saved_kwargs", "metadata", "spec", "render_mode", "_np_random"})
_INNER_ATTRS = ("env", "game")  # the wrapped env; MinAtar's game objects (``BaseEnv.game.env``)


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return not isinstance(value, np.generic) or value.dtype.kind in "biufc"
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biufc"
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return False


def _layers(env: Any) -> list[Any]:
    layers, seen = [], set()
    stack = [env]
    while stack:
        layer = stack.pop(0)
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        layers.append(layer)
        if type(layer).__name__ == "AsyncVectorEnv":
            raise TypeError("an AsyncVectorEnv's envs live in other processes and cannot be checkpointed; use "
                            "vectorization_mode='sync' (SyncVectorEnv) for runs that resume exactly")
        for name in _INNER_ATTRS:
            inner = vars(layer).get(name)
            if inner is not None and not _plain(inner) and not isinstance(inner, np.random.RandomState):
                stack.append(inner)
        stack.extend(vars(layer).get("envs") or [])
    return layers


def env_state(env: Any) -> list[dict[str, Any]]:
    """The state of a gymnasium env (or ``SyncVectorEnv`` / native vector env), mid-episode included.

    For each wrapper layer, the env itself, each sub-env of a vector env and the game objects of MinAtar envs
    (attributes ``env``, ``envs``, ``game`` are followed): its attributes of plain types (numbers, strings,
    numeric numpy arrays and lists of them: classic-control's ``state``, ``TimeLimit``'s ``_elapsed_steps``, a
    vector env's autoreset flags, a MinAtar game's positions), its ``np.random.RandomState`` attributes, its
    ``np_random`` generator, its spaces' generators and, for MuJoCo envs, the simulator's full integration
    state (``mj_getState``, ``mjSTATE_INTEGRATION``).
    State kept elsewhere (Box2D bodies, objects of other types, other processes) is not captured: checkpoint
    such envs at episode boundaries, where ``reset`` rebuilds it from ``np_random``.

    Raises:
        TypeError: ``env`` is an ``AsyncVectorEnv``.
    """
    out = []
    for layer in _layers(env):
        attrs = {k: v for k, v in vars(layer).items()
                 if k not in _SKIP_ATTRS and not k.startswith("__") and _plain(v)}
        entry: dict[str, Any] = {"class": type(layer).__name__, "attrs": attrs, "random_states": {
            k: v.get_state() for k, v in vars(layer).items() if isinstance(v, np.random.RandomState)}}
        gen = vars(layer).get("_np_random")
        if isinstance(gen, np.random.Generator):
            entry["np_random"] = _generator_state(gen)
        spaces = {}
        for name in _SPACE_ATTRS:
            space = vars(layer).get(name)
            gen = getattr(space, "_np_random", None)
            if isinstance(gen, np.random.Generator):
                spaces[name] = _generator_state(gen)
        entry["spaces"] = spaces
        model, data = vars(layer).get("model"), vars(layer).get("data")
        if type(data).__name__ == "MjData":
            import mujoco

            spec = mujoco.mjtState.mjSTATE_INTEGRATION
            sim = np.empty(mujoco.mj_stateSize(model, spec), dtype=np.float64)
            mujoco.mj_getState(model, data, sim, spec)
            entry["mujoco"] = sim
        out.append(entry)
    return out


def load_env_state(env: Any, state: list[Mapping[str, Any]]) -> None:
    """Put back what :func:`env_state` returned, into an env built the same way.

    Raises:
        ValueError: the env's layers differ from the saved ones (another env id or wrappers).
    """
    layers = _layers(env)
    names = [type(layer).__name__ for layer in layers]
    saved = [entry["class"] for entry in state]
    if names != saved:
        raise ValueError(f"the checkpoint's env has the layers {saved}, this env {names}; build the env as the "
                         "run that wrote the checkpoint did")
    for layer, entry in zip(layers, state, strict=True):
        for key, value in entry["attrs"].items():
            current = vars(layer).get(key)
            if (isinstance(current, np.ndarray) and isinstance(value, np.ndarray)
                    and current.shape == value.shape and current.dtype == value.dtype):
                current[...] = value  # in place: other objects may hold this buffer
            else:
                setattr(layer, key, value)
        for key, value in entry["random_states"].items():
            vars(layer)[key].set_state(value)  # in place: MinAtar shares one RandomState between two objects
        if "np_random" in entry:
            layer._np_random = _load_generator(vars(layer).get("_np_random"), entry["np_random"])
        for name, gen_state in entry["spaces"].items():
            space = vars(layer)[name]
            space._np_random = _load_generator(space._np_random, gen_state)
        if "mujoco" in entry:
            import mujoco

            mujoco.mj_setState(layer.model, layer.data, entry["mujoco"], mujoco.mjtState.mjSTATE_INTEGRATION)
            mujoco.mj_forward(layer.model, layer.data)


# -- the file format: a JSON tree plus numpy arrays in one .npz ------------------------------------
def _encode(value: Any, arrays: dict[str, np.ndarray], where: str) -> Any:
    def put(array: np.ndarray) -> str:
        key = f"a{len(arrays)}"
        arrays[key] = array
        return key

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"{where}: a numpy array of dtype {value.dtype} cannot go into a checkpoint; "
                            "keep numeric arrays in the registered state")
        return {"__np__": put(value)}
    if isinstance(value, np.generic):
        return {"__npscalar__": put(np.asarray(value))}
    if isinstance(value, bytes):
        return {"__bytes__": put(np.frombuffer(value, dtype=np.uint8))}
    if isinstance(value, (list, tuple)):
        items = [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: _encode(v, arrays, f"{where}.{k}") for k, v in value.items()}
        return {"__dict__": [[_encode(k, arrays, where), _encode(v, arrays, f"{where}.{k}")]
                             for k, v in value.items()]}
    module = type(value).__module__.split(".")[0]
    if module == "torch" and type(value).__name__ in ("Tensor", "Parameter"):
        tensor = value.detach().cpu()
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype == "bfloat16":
            import torch

            tensor = tensor.view(torch.int16)
        return {"__torch__": put(tensor.numpy().copy()), "dtype": dtype}
    if module == "paddle" and hasattr(value, "numpy"):
        return {"__paddle__": put(np.asarray(value.numpy()))}
    raise TypeError(f"{where}: a {type(value).__module__}.{type(value).__name__} cannot go into a checkpoint; "
                    "register state of plain types (numbers, strings, numpy arrays, tensors, lists, dicts)")


def _decode(value: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "__np__" in value:
        return np.array(arrays[value["__np__"]])
    if "__npscalar__" in value:
        return arrays[value["__npscalar__"]][()]
    if "__bytes__" in value:
        return arrays[value["__bytes__"]].tobytes()
    if "__tuple__" in value:
        return tuple(_decode(v, arrays) for v in value["__tuple__"])
    if "__dict__" in value:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in value["__dict__"]}
    if "__torch__" in value:
        import torch

        tensor = torch.from_numpy(np.array(arrays[value["__torch__"]]))
        return tensor.view(torch.bfloat16) if value["dtype"] == "bfloat16" else tensor
    if "__paddle__" in value:
        import paddle

        return paddle.to_tensor(np.array(arrays[value["__paddle__"]]))
    return {k: _decode(v, arrays) for k, v in value.items()}


def _write_checkpoint(path: str, tree: Mapping[str, Any]) -> None:
    arrays: dict[str, np.ndarray] = {}
    encoded = _encode(dict(tree), arrays, "checkpoint")
    arrays["__tree__"] = np.frombuffer(json.dumps(encoded).encode("utf-8"), dtype=np.uint8)
    arrays["__format__"] = np.frombuffer(FORMAT.encode("ascii"), dtype=np.uint8)
    with atomic_write(path) as f:
        np.savez(f, **arrays)


def read_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint file written by :class:`Checkpointer` (no code in it runs: ``allow_pickle=False``).

    Returns:
        ``{"meta": {...}, "state": {name: registered state}}``; tensors come back as CPU tensors.

    Raises:
        CheckpointError: the file is missing, damaged (truncated, corrupt) or not a run checkpoint; the
            message names the file and what to do.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"no checkpoint at {path}: the run stopped before its first checkpoint, or the folder "
                              "is not a run's log folder; start the run again without --resume")
    fix = ("it is damaged; resume from a copy of the folder, or start the run again without --resume "
           "(delete the file first)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as err:
        raise CheckpointError(f"cannot read the checkpoint {path} ({type(err).__name__}: {err}): {fix}") from err
    if "__format__" not in arrays or arrays["__format__"].tobytes() != FORMAT.encode("ascii"):
        raise CheckpointError(f"{path} is not a run checkpoint of format {FORMAT}: {fix}")
    try:
        tree = json.loads(arrays.pop("__tree__").tobytes().decode("utf-8"))
        return _decode(tree, arrays)
    except (KeyError, ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"cannot decode the checkpoint {path} ({type(err).__name__}: {err}): {fix}") from err


# -- the checkpointer ------------------------------------------------------------------------------
class Checkpointer:
    """Saves a run's registered state every ``every_min`` minutes, on SIGTERM / SIGINT and at the end.

    Args:
        run: the run's :class:`RunLog` (its curve position and clock are saved too).
        every_min: minutes between periodic checkpoints (> 0), or 0 for none (only on a signal and at the end).
        resume: continue from ``<run.logdir>/checkpoint.npz`` in :meth:`start`.
        config: the run's settings (e.g. ``vars(args)``): saved, and compared on resume, except the keys in
            :data:`VOLATILE_SETTINGS` (and ``ignore``).
        ignore: more setting names that may differ on resume.

    Checkpoints are taken only in :meth:`maybe_save`, which the training loop calls where the registered state
    is consistent (between two steps, or at an episode's end for envs whose mid-episode state
    :func:`env_state` cannot capture). A SIGTERM or SIGINT (Ctrl-C) received meanwhile makes the next
    :meth:`maybe_save` save and exit (``SystemExit`` with status 128 + the signal number); a second signal
    before that interrupts at once (``KeyboardInterrupt``), keeping the previous checkpoint.

    Raises:
        ValueError: ``every_min`` is negative.
    """

    def __init__(self, run: RunLog, *, every_min: float = 10.0, resume: bool = False,
                 config: Mapping[str, Any] | None = None, ignore: tuple[str, ...] = ()) -> None:
        if every_min is None or not every_min >= 0:
            raise ValueError(f"--checkpoint-every must be >= 0 minutes, got {every_min!r}")
        self.run = run
        self.path = os.path.join(run.logdir, CHECKPOINT_FILE)
        self.every_s = 60.0 * every_min
        self.resume = resume
        skip = VOLATILE_SETTINGS | set(ignore)
        self.config = {k: v for k, v in (config or {}).items() if k not in skip}
        self.resumed = False
        self.saves = 0
        self._objects: dict[str, Any] = {}
        self._counters: types.SimpleNamespace | None = None
        self._signal: int | None = None
        self._previous: dict[int, Any] = {}
        self._last = time.monotonic()

    # registration
    def register(self, **objects: Any) -> None:
        """Add objects whose state a checkpoint holds, restored in place on resume: anything with
        ``state_dict`` / ``load_state_dict``, ``np.random.Generator``, ``random.Random``, gymnasium envs and
        vector envs (:func:`env_state`).

        Raises:
            ValueError: a name is taken or reserved (``counters``).
            TypeError: an object of another kind.
        """
        for name, obj in objects.items():
            if name in self._objects or name == "counters":
                raise ValueError(f"Checkpointer.register: the name {name!r} is taken; use another")
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")
                    or isinstance(obj, (np.random.Generator, random.Random)) or _is_env(obj)):
                raise TypeError(f"Checkpointer.register: {name}={type(obj).__name__} has no state_dict / "
                                "load_state_dict; wrap it, or keep its values in track()")
            self._objects[name] = obj

    def track(self, **counters: Any) -> types.SimpleNamespace:
        """The loop's counters and small values (plain types, numpy arrays, tensors), saved and restored.

        Returns:
            a ``SimpleNamespace`` with these initial values; :meth:`start` replaces them on resume.
        """
        self._counters = types.SimpleNamespace(**counters)
        return self._counters

    # state
    def _state(self) -> dict[str, Any]:
        state = {}
        for name, obj in self._objects.items():
            if isinstance(obj, np.random.Generator):
                state[name] = _generator_state(obj)
            elif isinstance(obj, random.Random):
                state[name] = obj.getstate()
            elif _is_env(obj):
                state[name] = env_state(obj)
            else:
                state[name] = obj.state_dict()
        state["counters"] = vars(self._counters) if self._counters is not None else {}
        return state

    def save(self, step: int, finished: bool = False) -> None:
        """Write a checkpoint now (the whole file is replaced in one rename).

        Args:
            step: the run's x coordinate (env steps) at this point; tensorboard events after it are dropped
                on resume.
            finished: the run is complete (a later ``--resume`` exits at once: there is nothing to do).
        """
        meta = {"step": int(step), "finished": bool(finished), "config": self.config, "saved_at": time.time(),
                "run": self.run.state_dict(), "rng": rng_state()}
        _write_checkpoint(self.path, {"meta": meta, "state": self._state()})
        self.saves += 1
        self._last = time.monotonic()

    def load(self) -> int:
        """Restore every registered object, the counters, the RNGs and the run log from the checkpoint.

        Returns:
            the step the checkpoint was taken at.

        Raises:
            CheckpointError: the file is missing or damaged, belongs to a run with other settings, or does not
                fit the registered objects.
            RunFinished: (a ``SystemExit`` with status 0) the run has finished: there is nothing to resume.
        """
        checkpoint = read_checkpoint(self.path)
        meta, state = checkpoint["meta"], checkpoint["state"]
        if meta.get("finished"):
            logger.info("%s belongs to a run that finished (see %s beside it): nothing to resume", self.path,
                        SUMMARY_FILE)
            raise RunFinished(0)
        differ = sorted(k for k in set(meta["config"]) | set(self.config)
                        if _canonical(meta["config"].get(k, "<unset>")) != _canonical(self.config.get(k, "<unset>")))
        if differ:
            detail = ", ".join(f"{k}: {meta['config'].get(k, '<unset>')!r} there, "
                               f"{self.config.get(k, '<unset>')!r} here" for k in differ)
            raise CheckpointError(f"{self.path} was written with other settings ({detail}); resume with the "
                                  "settings of that run, or start a new run in another folder")
        expected = set(self._objects) | {"counters"}
        if set(state) != expected:
            raise CheckpointError(f"{self.path} holds {sorted(state)}, this program registers {sorted(expected)}; "
                                  "resume with the program version that wrote it")
        try:
            for name, obj in self._objects.items():
                if isinstance(obj, np.random.Generator):
                    _load_generator(obj, state[name])
                elif isinstance(obj, random.Random):
                    version, internal, gauss = state[name]
                    obj.setstate((version, tuple(internal), gauss))
                elif _is_env(obj):
                    load_env_state(obj, state[name])
                else:
                    obj.load_state_dict(state[name])
        except (KeyError, ValueError, TypeError, RuntimeError) as err:
            raise CheckpointError(f"{self.path} does not fit this run ({type(err).__name__}: {err}); resume with "
                                  "the program version and settings that wrote it") from err
        if self._counters is not None:
            vars(self._counters).update(state["counters"])
        load_rng_state(meta["rng"])
        step = int(meta["step"])
        self.run.load_state_dict(meta["run"], purge_step=step + 1)
        self.resumed = True
        return step

    # control
    def start(self) -> bool:
        """Load the checkpoint when resuming, then install the SIGTERM / SIGINT handlers.

        Returns:
            whether the run resumed from a checkpoint.

        Raises:
            CheckpointError, RunFinished: see :meth:`load`.
        """
        if self.resume:
            step = self.load()
            logger.info("resumed %s at step %d", self.path, step)
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[signum] = signal.signal(signum, self._on_signal)
            except ValueError:  # not the main thread: no handlers, periodic checkpoints only
                break
        self._last = time.monotonic()
        return self.resumed

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._signal is not None:
            raise KeyboardInterrupt
        self._signal = signum

    @property
    def stop_requested(self) -> bool:
        """Whether a SIGTERM / SIGINT arrived (the next :meth:`maybe_save` saves and exits)."""
        return self._signal is not None

    def maybe_save(self, step: int) -> bool:
        """Save if a signal arrived (then exit) or ``every_min`` minutes passed since the last save.

        Args:
            step: the run's x coordinate (env steps) at this point.

        Returns:
            whether a checkpoint was written.

        Raises:
            SystemExit: after saving, when a SIGTERM / SIGINT arrived (status 128 + its number).
        """
        if self._signal is not None:
            self.save(step)
            signum = self._signal
            self.close()
            logger.info("%s: saved %s at step %d; continue with --resume %s", signal.Signals(signum).name,
                        self.path, step, self.run.logdir)
            self.run.close()
            raise SystemExit(128 + signum)
        if self.every_s > 0 and time.monotonic() - self._last >= self.every_s:
            self.save(step)
            return True
        return False

    def finish(self, step: int) -> None:
        """Save the final checkpoint (marked finished) and put the previous signal handlers back."""
        self.save(step, finished=True)
        self.close()

    def close(self) -> None:
        """Put the signal handlers that :meth:`start` replaced back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


def _is_env(obj: Any) -> bool:
    gym = sys.modules.get("gymnasium")
    return gym is not None and isinstance(obj, (gym.Env, gym.vector.VectorEnv))


def _canonical(value: Any) -> str:
    """``value`` as comparable text (tuples and lists alike, NaN equal to NaN)."""
    return json.dumps(value, sort_keys=True, default=repr)
