"""A running mean / std observation filter whose statistics are merged across sampling processes.

As in OpenAI's ES and PARL's ES example (Salimans et al. 2017): every sampler normalises observations with
``(obs - mean) / std`` clipped to ``[-clip, clip]``, and with probability ``filter_update_prob`` per step it also
adds the observation to its statistics and to an *increment* buffer. The learner merges each sampler's increment
into its own statistics (:meth:`MeanStdFilter.apply_increment`) and sends the merged statistics back with the next
weights (:meth:`MeanStdFilter.state_dict` / :meth:`MeanStdFilter.load_state_dict`).

Statistics are kept as ``(n, mean, m2)`` (count, mean, sum of squared deviations) and merged with the parallel
formula of Chan, Golub & LeVeque (1979), so merging increments gives the statistics of the union of the data.
"""

from __future__ import annotations

import numpy as np

from evokit.errors import FilterStateError

__all__ = ["RunningStat", "MeanStdFilter"]


class RunningStat:
    """Count, mean and sum of squared deviations of a stream of float vectors (float64).

    Args:
        shape: the shape of one observation.
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.n = 0
        self.mean = np.zeros(self.shape, dtype=np.float64)
        self.m2 = np.zeros(self.shape, dtype=np.float64)

    def push_batch(self, x: np.ndarray) -> None:
        """Add the rows of ``x``: float ``[B, *shape]`` (B may be 0)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[1:] != self.shape:
            raise ValueError(f"observations have shape {x.shape[1:]}, the filter expects {self.shape}")
        if x.shape[0] == 0:
            return
        self.merge(x.shape[0], x.mean(axis=0), ((x - x.mean(axis=0)) ** 2).sum(axis=0))

    def merge(self, n: int, mean: np.ndarray, m2: np.ndarray) -> None:
        """Merge the statistics ``(n, mean, m2)`` of other data (Chan et al. 1979)."""
        if n == 0:
            return
        total = self.n + n
        delta = mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + m2 + delta * delta * (self.n * n / total)
        self.n = total

    @property
    def var(self) -> np.ndarray:
        """float64 ``[*shape]`` the sample variance (ones before two observations)."""
        return self.m2 / (self.n - 1) if self.n > 1 else np.ones(self.shape)

    @property
    def std(self) -> np.ndarray:
        """float64 ``[*shape]`` the sample standard deviation."""
        return np.sqrt(self.var)

    def state(self) -> dict[str, np.ndarray]:
        """``{"n", "mean", "m2"}`` as arrays (copies)."""
        return {"n": np.asarray(self.n, dtype=np.int64), "mean": self.mean.copy(), "m2": self.m2.copy()}

    @classmethod
    def from_state(cls, state: dict, shape: tuple[int, ...], what: str) -> RunningStat:
        """Rebuild from :meth:`state`, checking it.

        Raises:
            FilterStateError: a key is missing, a shape differs, or a value is invalid (negative, not finite).
        """
        fix = ("send the learner's filter.state_dict() unchanged, or restart without the saved filter "
               "(the statistics are rebuilt from the first observations)")
        missing = [k for k in ("n", "mean", "m2") if k not in state]
        if missing:
            raise FilterStateError(f"observation filter state {what!r} lacks {missing}; {fix}")
        mean = np.asarray(state["mean"], dtype=np.float64)
        m2 = np.asarray(state["m2"], dtype=np.float64)
        n = np.asarray(state["n"])
        stat = cls(shape)
        if mean.shape != stat.shape or m2.shape != stat.shape:
            raise FilterStateError(f"observation filter state {what!r} has shapes {mean.shape} / {m2.shape}, the "
                                   f"filter expects {stat.shape} (was it saved for another environment?); {fix}")
        if n.shape != () or not np.issubdtype(n.dtype, np.integer) or int(n) < 0:
            raise FilterStateError(f"observation filter state {what!r} has count n={n!r}, expected an integer "
                                   f">= 0; {fix}")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(m2)) and np.all(m2 >= 0)):
            raise FilterStateError(f"observation filter state {what!r} holds NaN, inf or a negative m2; {fix}")
        stat.n, stat.mean, stat.m2 = int(n), mean.copy(), m2.copy()
        return stat


class MeanStdFilter:
    """Normalises observations with running statistics: ``clip((obs - mean) / (std + 1e-8), -clip, clip)``.

    Args:
        shape: the observation shape, e.g. ``(17,)``.
        clip: the bound of the normalised values (0 = no clipping; default 10, as PARL).
        update_prob: the probability that a step's observation is added to the statistics
            (PARL's ``filter_update_prob``; 1.0 adds every observation).
        seed: seed of the update coin flips.
    """

    def __init__(self, shape: tuple[int, ...], *, clip: float = 10.0, update_prob: float = 1.0,
                 seed: int | None = None) -> None:
        if not 0.0 <= update_prob <= 1.0:
            raise ValueError(f"filter_update_prob must be in [0, 1], got {update_prob}")
        self.shape = tuple(int(s) for s in shape)
        self.clip = float(clip)
        self.update_prob = float(update_prob)
        self.rs = RunningStat(self.shape)
        self.increment = RunningStat(self.shape)
        self._rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray, update: bool = True) -> np.ndarray:
        """Normalise a batch of observations, first adding each row to the statistics with ``update_prob``.

        Args:
            obs: float ``[B, *shape]``.
            update: False never adds (evaluation).

        Returns:
            float32 ``[B, *shape]`` the normalised observations.
        """
        obs = np.asarray(obs)
        if update and self.update_prob > 0:
            chosen = obs if self.update_prob >= 1 else obs[self._rng.random(obs.shape[0]) < self.update_prob]
            self.rs.push_batch(chosen)
            self.increment.push_batch(chosen)
        out = (obs - self.rs.mean) / (self.rs.std + 1e-8)
        if self.clip > 0:
            out = np.clip(out, -self.clip, self.clip)
        return out.astype(np.float32)

    def pop_increment(self) -> dict[str, np.ndarray]:
        """Return the statistics of the observations added since the last call (and start a new increment)."""
        state = self.increment.state()
        self.increment = RunningStat(self.shape)
        return state

    def apply_increment(self, increment: dict) -> None:
        """Merge a sampler's :meth:`pop_increment` into the statistics (the learner side).

        Raises:
            FilterStateError: the increment is malformed (see :meth:`RunningStat.from_state`).
        """
        inc = RunningStat.from_state(increment, self.shape, "increment")
        self.rs.merge(inc.n, inc.mean, inc.m2)

    def state_dict(self) -> dict[str, np.ndarray]:
        """The statistics to send to samplers or save: ``{"n", "mean", "m2"}``."""
        return self.rs.state()

    def load_state_dict(self, state: dict) -> None:
        """Replace the statistics with a learner's :meth:`state_dict` and clear the increment.

        Raises:
            FilterStateError: the state is malformed.
        """
        self.rs = RunningStat.from_state(state, self.shape, "state")
        self.increment = RunningStat(self.shape)
