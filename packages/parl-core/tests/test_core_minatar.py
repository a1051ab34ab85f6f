"""parl.env.make_minatar: MinAtar's games through gymnasium with flat float32 observations."""

import sys

import gymnasium as gym
import numpy as np
import pytest

from parl_core.env import is_minatar, make_minatar


def test_breakout_flat_float_observations_and_a_whole_episode():
    env = make_minatar("MinAtar/Breakout-v1")
    assert env.observation_space.shape == (400,) and env.observation_space.dtype == np.float32
    assert env.action_space == gym.spaces.Discrete(3)  # v1: the minimal action set
    obs, _ = env.reset(seed=0)
    assert obs.shape == (400,) and obs.dtype == np.float32 and set(np.unique(obs)) <= {0.0, 1.0}
    assert env.observation_space.contains(obs)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total, steps, done = total + reward, steps + 1, terminated or truncated
    assert steps < 10_000 and total >= 0.0  # a random paddle loses the ball (terminated) long before the limit
    env.close()


def test_unflattened_observations_seeded_resets_and_the_step_limit():
    env = make_minatar("MinAtar/Breakout-v0", flatten=False, max_episode_steps=5)
    assert env.observation_space.shape == (10, 10, 4) and env.action_space.n == 6
    first, _ = env.reset(seed=3)
    again, _ = env.reset(seed=3)
    np.testing.assert_array_equal(first, again)
    truncated = False
    for _ in range(5):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated:
            break
    assert truncated or terminated


def test_vector_env_of_minatar_games():
    envs = gym.vector.SyncVectorEnv([lambda: make_minatar("MinAtar/SpaceInvaders-v1") for _ in range(3)])
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 600) and obs.dtype == np.float32  # SpaceInvaders: 6 channels
    envs.close()


def test_bad_input_names_the_fix(monkeypatch):
    assert is_minatar("MinAtar/Breakout-v1") and not is_minatar("CartPole-v1")
    with pytest.raises(ValueError, match="MinAtar/Breakout-v1"):
        make_minatar("CartPole-v1")
    monkeypatch.setitem(sys.modules, "minatar", None)  # as if the package were not installed
    monkeypatch.setitem(sys.modules, "minatar.gym", None)
    with pytest.raises(ImportError, match=r"parl-core\[minatar\]"):
        make_minatar("MinAtar/Breakout-v1")
