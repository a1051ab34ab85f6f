"""parl.env.atari_wrappers.wrap_deepmind on real ALE games (ale-py ships the ROMs)."""

import ale_py
import gymnasium as gym
import numpy as np
import pytest

from parl.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls, wrap_deepmind

gym.register_envs(ale_py)


@pytest.mark.parametrize("obs_format, shape", [("NHWC", (84, 84, 4)), ("NCHW", (4, 84, 84))])
def test_pong_observations_frame_skip_and_clipped_rewards(obs_format, shape):
    env = wrap_deepmind(gym.make("PongNoFrameskip-v4"), dim=84, obs_format=obs_format)
    obs, _ = env.reset(seed=0)
    assert obs.shape == shape and obs.dtype == np.uint8 and env.observation_space.shape == shape
    ale = env.unwrapped.ale
    # no-op reset (1..30 no-ops of 4 frames) plus FIRE and action 2 after the reset
    start = ale.getEpisodeFrameNumber()
    assert 4 * (1 + 2) <= start <= 4 * (30 + 2)
    rewards = []
    for _ in range(400):
        before = ale.getEpisodeFrameNumber()
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert ale.getEpisodeFrameNumber() - before == 4  # frame skip 4
        rewards.append(reward)
        assert not (terminated or truncated)
    assert set(rewards) <= {-1.0, 0.0, 1.0} and -1.0 in rewards  # random play concedes points
    # the frame stack holds 4 different consecutive frames
    frames = np.moveaxis(obs, -1, 0) if obs_format == "NHWC" else obs
    assert len({f.tobytes() for f in frames}) > 1


def test_breakout_episodic_life_and_monitor():
    env = wrap_deepmind(gym.make("BreakoutNoFrameskip-v4"), obs_format="NCHW")
    env.reset(seed=1)
    ale = env.unwrapped.ale
    assert ale.lives() == 5
    life_ends = 0
    for _ in range(5000):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            lives = ale.lives()
            env.reset()
            if lives > 0:  # a lost life ends the learner's episode, not the game
                life_ends += 1
                assert ale.lives() == lives
            else:
                break
    assert life_ends == 4
    monitor = get_wrapper_by_cls(env, MonitorEnv)
    results = list(monitor.next_episode_results())
    assert len(results) == 1 and results[0][1] > 0  # one whole game, its unclipped score and length
    assert list(monitor.next_episode_results()) == []


def test_test_mode_keeps_whole_games_and_raw_rewards():
    env = wrap_deepmind(gym.make("BreakoutNoFrameskip-v4"), test=True, framestack=False)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84)
    assert get_wrapper_by_cls(env, gym.wrappers.ClipReward) is None


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="obs_format must be 'NHWC' or 'NCHW'"):
        wrap_deepmind(gym.make("PongNoFrameskip-v4"), obs_format="CHW")
    with pytest.raises(ValueError, match="needs an Atari env from ale-py"):
        wrap_deepmind(gym.make("CartPole-v1"))
