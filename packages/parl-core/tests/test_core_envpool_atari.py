"""EnvPoolAtari (parl_core.env.envpool_atari) against wrap_deepmind, frame by frame, on the same actions.

With ``noop_max=1`` on both sides (one no-op frame after a reset) the two paths show the same screens:
Pong over a whole game and the reset after it, Breakout until its first lost life. After a lost life they
differ by design (EnvPool's no-op frames against EpisodicLifeEnv's no-op step; see the module docstring),
so there the documented behaviour is checked instead.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from parl_core.env.envpool_atari import EnvPoolAtari, envpool_task_id


def test_missing_envpool_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)  # `import envpool` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'parl-core\[envpool\]'"):
        EnvPoolAtari("PongNoFrameskip-v4", 2)


def test_task_ids():
    assert envpool_task_id("PongNoFrameskip-v4") == "Pong-v5"
    assert envpool_task_id("MontezumaRevengeNoFrameskip-v4") == "MontezumaRevenge-v5"
    with pytest.raises(ValueError, match="NoFrameskip-v4"):
        envpool_task_id("ALE/Pong-v5")


def _deepmind(env_id: str, dim: int):
    gym = pytest.importorskip("gymnasium")
    ale_py = pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    from parl_core.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls, wrap_deepmind

    gym.register_envs(ale_py)
    env = wrap_deepmind(gym.make(env_id), dim=dim, obs_format="NCHW", noop_max=1)
    return env, get_wrapper_by_cls(env, MonitorEnv)


def _pool(env_id: str, num_envs: int, dim: int, **kwargs) -> EnvPoolAtari:
    pytest.importorskip("envpool")
    pytest.importorskip("ale_py")
    return EnvPoolAtari(env_id, num_envs, dim=dim, noop_max=1, **kwargs)


@pytest.mark.parametrize("dim", [42, 84])  # IMPALA's frames; PPO's, A2C's and DQN's
def test_pong_whole_game_equals_wrap_deepmind(dim):
    env, monitor = _deepmind("PongNoFrameskip-v4", dim)
    pool = _pool("PongNoFrameskip-v4", 1, dim)
    obs, _ = env.reset(seed=0)
    pool_obs, info = pool.reset()
    assert pool_obs.shape == (1, 4, dim, dim) and pool_obs.dtype == np.uint8
    np.testing.assert_array_equal(pool_obs[0], obs)
    assert (pool_obs[0] == pool_obs[0, :1]).all()  # after a reset: 4 copies of one frame
    rng = np.random.default_rng(0)
    games_done, steps_after = 0, 0
    while steps_after < 20:  # a whole game (about 800 steps of random play), the reset, 20 more steps
        action = int(rng.integers(pool.single_action_space.n))
        obs, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
            games_done += 1
        pool_obs, pool_reward, pool_terminated, pool_truncated, _ = pool.step(np.array([action]))
        np.testing.assert_array_equal(pool_obs[0], obs)
        assert (pool_reward[0], pool_terminated[0], pool_truncated[0]) == (reward, terminated, truncated)
        assert pool_reward.dtype == np.float32 and pool_reward[0] in (-1.0, 0.0, 1.0)
        steps_after += games_done > 0
    returns = [r for r, _ in pool.next_episode_results()]
    assert returns == [r for r, _ in monitor.next_episode_results()] and len(returns) == 1
    assert -21 <= returns[0] < 0  # the unclipped score of a game lost by random play
    assert pool.next_episode_results() == []  # each game once
    pool.close()


def test_breakout_equal_until_a_life_is_lost_then_episodic_life():
    env, _ = _deepmind("BreakoutNoFrameskip-v4", 84)
    pool = _pool("BreakoutNoFrameskip-v4", 2, 84)
    obs, _ = env.reset(seed=0)
    pool_obs, info = pool.reset()
    np.testing.assert_array_equal(pool_obs[0], obs)
    lives = info["lives"].copy()
    assert (lives == 5).all()
    rng = np.random.default_rng(1)
    for _ in range(500):
        actions = rng.integers(pool.single_action_space.n, size=2)
        obs, _, terminated, _, _ = env.step(int(actions[0]))
        pool_obs, reward, pool_terminated, _, info = pool.step(actions)
        if pool_terminated.any():
            break
        np.testing.assert_array_equal(pool_obs[0], obs)
    else:
        pytest.fail("no life lost in 500 steps of random Breakout")
    i = int(np.argmax(pool_terminated))
    assert info["lives"][i] == lives[i] - 1  # a lost life ends the episode ...
    assert (pool_obs[i] == pool_obs[i, :1]).all()  # ... the next one starts with a fresh stack ...
    assert pool.next_episode_results() == []  # ... and the game goes on
    pool.close()


def test_test_mode_plays_whole_games_and_nhwc():
    pool = _pool("BreakoutNoFrameskip-v4", 2, 42, test=True, obs_format="NHWC")
    obs, info = pool.reset(seed=3)
    assert obs.shape == (2, 42, 42, 4)
    rng = np.random.default_rng(2)
    ends, min_lives = 0, 5
    for _ in range(300):
        obs, _, terminated, truncated, info = pool.step(rng.integers(pool.single_action_space.n, size=2))
        ends += int((terminated | truncated).sum())
        min_lives = min(min_lives, int(info["lives"].min()))
    assert min_lives < 5  # lives were lost on the way ...
    assert ends == len(pool.next_episode_results())  # ... and only a whole game ended an episode
    pool.close()
