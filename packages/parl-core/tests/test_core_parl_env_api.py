"""PARL 2.x's env and utils surface: CompatWrapper (gymnasium -> old gym API), ActionMappingWrapper,
VectorEnv, wrap_rms and PARL's module paths, each used as PARL code uses them."""

import socket

import gymnasium as gym
import numpy as np
import pytest

from parl_core.env import ActionMappingWrapper, CompatWrapper, VectorEnv, wrap_rms


class OldApiEnv:
    """An old gym-style env (gym < 0.26): counts steps, ends after `length` steps."""

    def __init__(self, length=3):
        self.length, self.t, self.seeds = length, 0, []
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.actions = []

    def seed(self, seed=None):
        self.seeds.append(seed)
        return [seed]

    def reset(self):
        self.t = 0
        return np.zeros(2, np.float32)

    def step(self, action):
        self.t += 1
        self.actions.append(np.asarray(action))
        return np.full(2, self.t, np.float32), 1.0, self.t >= self.length, {}


def test_compat_wrapper_presents_gymnasium_through_the_old_api():
    env = CompatWrapper(gym.make("CartPole-v1"))
    assert env._max_episode_steps == 500
    env.seed(3)
    obs = env.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (4,)  # not (obs, info)
    result = env.step(0)
    assert len(result) == 4 and isinstance(result[2], bool)
    # seed() makes the next reset reproducible
    env.seed(3)
    np.testing.assert_array_equal(env.reset(), obs)
    # ... but later resets continue the random stream (PARL re-seeded every reset: identical episodes)
    assert not np.array_equal(env.reset(), obs)


def test_compat_wrapper_reports_time_limit_as_done_with_truncation_info():
    env = CompatWrapper(gym.make("Pendulum-v1"))  # never terminates; truncated at 200 steps
    env.reset()
    dones = [env.step(np.zeros(1, np.float32))[2:] for _ in range(200)]
    assert not any(done for done, _ in dones[:-1])
    done, info = dones[-1]
    assert done is True and info["TimeLimit.truncated"] is True


def test_compat_wrapper_forces_done_at_max_episode_steps_of_an_old_env():
    old = OldApiEnv(length=100)
    old._max_episode_steps = 2
    env = CompatWrapper(old)
    env.reset()
    assert env.step(0)[2] is False
    _, _, done, info = env.step(0)
    assert done is True and info["TimeLimit.truncated"] is True


def test_compat_wrapper_passes_an_old_api_env_through():
    old = OldApiEnv()
    env = CompatWrapper(old)
    assert env.seed(7) == [7] and old.seeds == [7]
    np.testing.assert_array_equal(env.reset(), np.zeros(2))
    assert env.step(0)[1:3] == (1.0, False)


def test_compat_wrapper_rejects_a_step_of_the_wrong_arity():
    class Broken(OldApiEnv):
        def step(self, action):
            return np.zeros(2), 0.0

    env = CompatWrapper(Broken())
    env.reset()
    with pytest.raises(ValueError, match="returned 2 values"):
        env.step(0)


def test_action_mapping_wrapper_has_parls_methods_on_an_old_api_env():
    old = OldApiEnv()
    old._max_episode_steps = 3
    env = ActionMappingWrapper(CompatWrapper(old))  # as PARL's ddpg / td3 / sac examples build it
    env.seed(5)
    assert old.seeds == [5] and env._max_episode_steps == 3
    assert float(env.action_space.low[0]) == -1.0 and float(env.action_space.high[0]) == 1.0
    env.reset()
    env.step(np.array([0.5], np.float32))
    env.step(np.array([-1.0005], np.float32))  # within PARL's 1e-3 tolerance: clipped to the bound
    np.testing.assert_allclose(old.actions, [[1.0], [-2.0]])
    with pytest.raises(ValueError, match="np.clip"):
        env.step(np.array([1.5], np.float32))


def test_action_mapping_wrapper_uses_per_dimension_bounds():
    env = ActionMappingWrapper(gym.make("Pendulum-v1"))
    env.action_space  # noqa: B018 - the property must not raise
    np.testing.assert_allclose(env.action(np.array([0.0], np.float32)), [0.0])
    np.testing.assert_allclose(env.action(np.array([1.0], np.float32)), [2.0])
    with pytest.raises(TypeError, match="Box"):
        ActionMappingWrapper(gym.make("CartPole-v1"))


def test_vector_env_steps_all_and_resets_finished_ones():
    envs = VectorEnv([OldApiEnv(length=1), OldApiEnv(length=5)])
    assert len(envs.reset()) == 2
    obs, rewards, dones, infos = envs.step([0, 0])
    assert dones == [True, False] and rewards == [1.0, 1.0]
    np.testing.assert_array_equal(obs[0], np.zeros(2))  # reset at once: the next episode's first obs
    np.testing.assert_array_equal(obs[1], np.full(2, 1.0))
    with pytest.raises(ValueError, match="one per env"):
        envs.step([0])


def test_wrap_rms_normalises_and_reports_raw_episode_return():
    raw = gym.make("Pendulum-v1")
    raw.reset(seed=0)
    raw_return = sum(raw.step(np.zeros(1, np.float32))[1] for _ in range(200))
    env = wrap_rms(gym.make("Pendulum-v1"), gamma=0.99)
    env.seed(0)
    env.reset()
    for _ in range(200):
        obs, reward, done, info = env.step(np.zeros(1, np.float32))
        assert np.all(np.abs(obs) <= 10.0) and abs(reward) <= 10.0
        if done:
            break
    assert done and info["episode"]["l"] == 200 and info["bad_transition"] is True
    assert info["episode"]["r"] == pytest.approx(raw_return, abs=1e-5)  # raw, not the scaled rewards
    ob_rms = env.get_ob_rms()
    assert ob_rms.count > 200 and ob_rms.mean.shape == (3,)
    test_env = wrap_rms(gym.make("Pendulum-v1"), gamma=None, test=True, ob_rms=ob_rms)
    test_env.reset()
    count = ob_rms.count
    _, reward, _, _ = test_env.step(np.zeros(1, np.float32))
    assert ob_rms.count == count and reward < 0  # frozen statistics, unscaled reward


def test_parl_module_paths_of_utils():
    from parl_core.utils import csv_logger, machine_info, rl_utils, stats, time_stat, window_stat

    assert window_stat.WindowStat is stats.WindowStat and time_stat.TimeStat is stats.TimeStat
    assert csv_logger.CSVLogger is stats.CSVLogger
    np.testing.assert_allclose(rl_utils.calc_discount_sum_rewards(np.array([1.0, 1.0, 1.0]), 0.5), [1.75, 1.5, 1.0])
    timer = time_stat.TimeStat()  # PARL's default window of one
    with timer:
        pass
    with timer:
        pass
    assert timer.count == 2 and len(timer.items) == 1
    assert machine_info.is_xpu_available() is False


def test_get_port_from_range_returns_a_free_port_in_range():
    from parl_core.utils import get_port_from_range

    port = get_port_from_range(30000, 30100)
    assert 30000 <= port <= 30100
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # it was free
        taken = sock.getsockname()[1]
        sock.listen()
        with pytest.raises(RuntimeError, match="no free TCP port"):
            get_port_from_range(taken, taken)
    with pytest.raises(ValueError, match="start"):
        get_port_from_range(10, 5)
