"""parl_core.env: OldGymToGymnasiumWrapper over a fake old gym-style env, ActionMappingWrapper."""

import gymnasium as gym
import numpy as np
import pytest

from parl_core.env import ActionMappingWrapper, OldGymToGymnasiumWrapper


class OldBox:
    """Duck-typed old ``gym.spaces.Box``."""

    def __init__(self, low, high, shape):
        self.low, self.high, self.shape, self.dtype = np.full(shape, low), np.full(shape, high), shape, np.float32


class OldDiscrete:
    def __init__(self, n):
        self.n = n


class OldStyleEnv:
    """Old gym API: reset() -> obs, step() -> (obs, reward, done, info), seed(s).

    Terminates when the action is 1; reports gym's ``TimeLimit.truncated`` at step ``limit`` if asked.
    """

    def __init__(self, limit=None, report_time_limit=True):
        self.observation_space = OldBox(-1.0, 1.0, (2,))
        self.action_space = OldDiscrete(2)
        self.limit = limit
        self.report_time_limit = report_time_limit
        self.seeds = []
        self.t = 0

    def seed(self, seed):
        self.seeds.append(seed)

    def reset(self):
        self.t = 0
        return np.zeros(2, dtype=np.float32)

    def step(self, action):
        self.t += 1
        info = {}
        done = action == 1
        if self.limit is not None and self.t >= self.limit and not done:
            done = True
            if self.report_time_limit:
                info["TimeLimit.truncated"] = True
        return np.full(2, self.t, dtype=np.float32), 1.0, done, info


def test_reset_returns_obs_and_info_and_seeds():
    env = OldGymToGymnasiumWrapper(OldStyleEnv())
    obs, info = env.reset(seed=42)
    assert obs.shape == (2,) and info == {}
    assert env.unwrapped.seeds == [42]
    assert isinstance(env.observation_space, gym.spaces.Box) and env.observation_space.shape == (2,)
    assert isinstance(env.action_space, gym.spaces.Discrete) and env.action_space.n == 2


def test_termination_is_not_truncation():
    env = OldGymToGymnasiumWrapper(OldStyleEnv())
    env.reset()
    assert env.step(0)[2:4] == (False, False)
    obs, reward, terminated, truncated, _ = env.step(1)
    assert (terminated, truncated, reward) == (True, False, 1.0)


def test_time_limit_info_becomes_truncated():
    env = OldGymToGymnasiumWrapper(OldStyleEnv(limit=3))
    env.reset()
    results = [env.step(0) for _ in range(3)]
    assert [(r[2], r[3]) for r in results] == [(False, False), (False, False), (False, True)]
    assert results[-1][4]["TimeLimit.truncated"] is True


def test_done_at_max_episode_steps_without_info_is_truncated():
    env = OldGymToGymnasiumWrapper(OldStyleEnv(limit=3, report_time_limit=False), max_episode_steps=3)
    env.reset()
    env.step(0)
    env.step(0)
    assert env.step(0)[2:4] == (False, True)


def test_wrapper_enforces_its_own_step_limit():
    env = OldGymToGymnasiumWrapper(OldStyleEnv(), max_episode_steps=2)
    env.reset()
    assert env.step(0)[2:4] == (False, False)
    assert env.step(0)[2:4] == (False, True)
    env.reset()  # the counter restarts
    assert env.step(0)[2:4] == (False, False)


def test_max_episode_steps_taken_from_the_env():
    old = OldStyleEnv()
    old._max_episode_steps = 5
    assert OldGymToGymnasiumWrapper(old).max_episode_steps == 5


def test_gymnasium_env_passes_through():
    env = OldGymToGymnasiumWrapper(gym.make("CartPole-v1"))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,)
    assert len(env.step(0)) == 5


def test_action_mapping_wrapper_maps_to_bounds():
    env = ActionMappingWrapper(gym.make("Pendulum-v1"))  # action bounds [-2, 2]
    assert float(env.action_space.low[0]) == -1.0 and float(env.action_space.high[0]) == 1.0
    np.testing.assert_allclose(env.action(np.array([0.5], dtype=np.float32)), [1.0])
    np.testing.assert_allclose(env.action(np.array([-1.0], dtype=np.float32)), [-2.0])
    with pytest.raises(ValueError, match="np.clip"):
        env.action(np.array([1.5], dtype=np.float32))
