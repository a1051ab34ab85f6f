"""PARL's MuJoCo wrappers (old gym API): observation / return normalisation and episode statistics.

:func:`wrap_rms` is what PARL's PPO example wraps a continuous-control env in::

    env = wrap_rms(gymnasium.make("HalfCheetah-v5"), gamma=0.99)
    obs = env.reset()                              # normalised by the running mean / std
    obs, reward, done, info = env.step(action)     # reward scaled by the running std of the return
    info.get("episode")                            # {"r": raw return, "l": length, "t": seconds}

The running moments use the parallel algorithm of Chan et al. (1979) for merging a batch's mean and
variance into the running ones.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from parl_core.env.compat_wrappers import CompatWrapper, Wrapper

__all__ = ["MonitorEnv", "RunningMeanStd", "TimeLimitMaskEnv", "VecNormalizeEnv", "get_ob_rms",
           "get_wrapper_by_cls", "wrap_rms"]


class RunningMeanStd:
    """Running mean and variance of arrays of shape ``shape``.

    Args:
        epsilon: initial pseudo-count (keeps the first variance finite).
        shape: the shape of one sample.
    """

    def __init__(self, epsilon: float = 1e-4, shape: tuple[int, ...] | int = ()) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = float(epsilon)

    def update(self, x: np.ndarray) -> None:
        """Merge a batch: float ``[N, *shape]``."""
        x = np.asarray(x, dtype=np.float64)
        self.update_from_moments(x.mean(axis=0), x.var(axis=0), x.shape[0])

    def update_from_moments(self, batch_mean: np.ndarray, batch_var: np.ndarray, batch_count: int) -> None:
        """Merge a batch given by its mean, variance and size."""
        delta = batch_mean - self.mean
        total = self.count + batch_count
        m2 = self.var * self.count + batch_var * batch_count + np.square(delta) * self.count * batch_count / total
        self.mean = self.mean + delta * batch_count / total
        self.var = m2 / total
        self.count = total


class TimeLimitMaskEnv(Wrapper):
    """Mark a time-limit end with ``info["bad_transition"] = True`` (a truncation, not a terminal state)."""

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        """Step; returns ``(obs, reward, done, info)``."""
        obs, reward, done, info = self.env.step(action)
        if done and info.get("TimeLimit.truncated", False):
            info["bad_transition"] = True
        return obs, reward, done, info


class MonitorEnv(Wrapper):
    """Record each episode's raw return, length and wall time in ``info["episode"]`` at its end."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.tstart = time.time()
        self.rewards: list[float] = []

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        """Step; at an episode's end ``info["episode"] = {"r": return, "l": length, "t": seconds}``."""
        obs, reward, done, info = self.env.step(action)
        self.rewards.append(float(reward))
        if done:
            info["episode"] = {"r": round(sum(self.rewards), 6), "l": len(self.rewards),
                               "t": round(time.time() - self.tstart, 6)}
            self.rewards = []
        return obs, reward, done, info

    def reset(self, **kwargs: Any) -> Any:
        """Reset; starts a new episode record."""
        self.rewards = []
        return self.env.reset(**kwargs)


class VecNormalizeEnv(Wrapper):
    """Normalise observations by their running mean / std and rewards by the running std of the return.

    Args:
        env: an old-API env with a ``Box`` observation space.
        ob: normalise observations.
        ret: scale rewards by the running std of the discounted return.
        clipob: clip normalised observations to ``[-clipob, clipob]``.
        cliprew: clip scaled rewards to ``[-cliprew, cliprew]``.
        gamma: discount of the return whose std scales the reward.
        epsilon: added to variances before the square root.
    """

    def __init__(self, env: Any, ob: bool = True, ret: bool = True, clipob: float = 10.0, cliprew: float = 10.0,
                 gamma: float = 0.99, epsilon: float = 1e-8) -> None:
        super().__init__(env)
        self.ob_rms = RunningMeanStd(shape=env.observation_space.shape) if ob else None
        self.ret_rms = RunningMeanStd(shape=()) if ret else None
        self.clipob, self.cliprew, self.gamma, self.epsilon = clipob, cliprew, gamma, epsilon
        self.ret = np.zeros(1)
        self.training = True

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        """Step; returns the normalised observation and the scaled reward."""
        obs, reward, done, info = self.env.step(action)
        self.ret = self.ret * self.gamma + reward
        if self.ret_rms is not None:
            if self.training:
                self.ret_rms.update(self.ret)
            reward = float(np.clip(reward / np.sqrt(self.ret_rms.var + self.epsilon), -self.cliprew, self.cliprew))
        if done:
            self.ret = np.zeros(1)
        return self._obfilt(obs), reward, done, info

    def reset(self, **kwargs: Any) -> Any:
        """Reset; returns the normalised first observation."""
        self.ret = np.zeros(1)
        return self._obfilt(self.env.reset(**kwargs))

    def _obfilt(self, obs: Any) -> Any:
        if self.ob_rms is None:
            return obs
        obs = np.asarray(obs)
        if self.training:
            self.ob_rms.update(obs[None])
        return np.clip((obs - self.ob_rms.mean) / np.sqrt(self.ob_rms.var + self.epsilon), -self.clipob, self.clipob)

    def get_ob_rms(self) -> RunningMeanStd | None:
        """The observation statistics (to copy into an evaluation env)."""
        return self.ob_rms

    def set_ob_rms(self, ob_rms: RunningMeanStd | None) -> None:
        """Use these observation statistics (e.g. the training env's)."""
        self.ob_rms = ob_rms

    def train(self) -> None:
        """Update the statistics on every step (the default)."""
        self.training = True

    def eval(self) -> None:
        """Freeze the statistics."""
        self.training = False


def get_wrapper_by_cls(env: Any, cls: type) -> Any:
    """The outermost wrapper of type ``cls`` in the chain ``env, env.env, ...``; ``None`` if absent."""
    while env is not None:
        if isinstance(env, cls):
            return env
        env = env.__dict__.get("env") if hasattr(env, "__dict__") else None
    return None


def get_ob_rms(env: Any) -> RunningMeanStd | None:
    """The observation statistics of the :class:`VecNormalizeEnv` inside ``env`` (``None`` if none)."""
    wrapper = get_wrapper_by_cls(env, VecNormalizeEnv)
    return wrapper.get_ob_rms() if wrapper is not None else None


def wrap_rms(env: Any, gamma: float | None, test: bool = False, ob_rms: RunningMeanStd | None = None) -> Any:
    """Wrap a continuous-control env for PPO: old API, time-limit mask, episode monitor, normalisation.

    Args:
        env: a gymnasium env (``gymnasium.make("HalfCheetah-v5")``) or an old gym-style env.
        gamma: discount of the return used to scale rewards (ignored when ``test``).
        test: an evaluation env: rewards are not scaled and the observation statistics are frozen.
        ob_rms: the training env's observation statistics (with ``test``).

    Returns:
        an old-API env (``reset() -> obs``, ``step() -> (obs, reward, done, info)``); ``info["episode"]``
        holds the raw return at each episode's end.
    """
    env = MonitorEnv(TimeLimitMaskEnv(CompatWrapper(env)))
    if test:
        env = VecNormalizeEnv(env, ret=False)
        env.eval()
        env.set_ob_rms(ob_rms)
        return env
    return VecNormalizeEnv(env, gamma=0.99 if gamma is None else gamma)
