"""PARL 2.x Atari code: ``wrap_deepmind`` takes the old-API env PARL's dqn / a2c / ppo examples pass it
(``gym.make(...)`` under gym < 0.26) and hands back the old API those examples then use (``seed``,
``reset() -> obs``, 4-tuple ``step``, the evaluation env's ``get_real_done`` / ``get_eval_rewards``), written
here in PARL's style."""

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="Atari needs ale-py (pip install ale-py)")
pytest.importorskip("cv2", reason="wrap_deepmind's resize needs OpenCV (pip install opencv-python-headless)")

from parl.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls, wrap_deepmind  # noqa: E402
from parl.env.vector_env import VectorEnv  # noqa: E402


def test_dqn_training_env_speaks_the_old_api(old_gym):
    # as PARL's benchmark/torch/dqn builds its training env
    def make_env():
        return wrap_deepmind(old_gym.make("PongNoFrameskip-v4"), dim=84, framestack=False, obs_format="NCHW")

    env = make_env()
    assert env.seed(7) == [7]
    obs = env.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (84, 84) and obs.dtype == np.uint8
    assert env.action_space.n == 6 and env.observation_space.shape == (84, 84)
    result = env.step(0)
    assert len(result) == 4
    next_obs, reward, done, info = result
    assert next_obs.shape == (84, 84) and reward in (-1.0, 0.0, 1.0) and done in (False, True)
    assert isinstance(info, dict)
    # seed() seeds the next reset (the no-op count, the game's randomness)
    first, same_seed, other_seed = make_env(), make_env(), make_env()
    for each, seed in ((first, 7), (same_seed, 7), (other_seed, 8)):
        each.seed(seed)
        each.reset()
    frames = [[each.step(0)[0] for _ in range(40)] for each in (first, same_seed, other_seed)]
    np.testing.assert_array_equal(frames[0], frames[1])
    assert not np.array_equal(frames[0], frames[2])


def test_dqn_eval_env_reports_whole_games_through_get_real_done(old_gym):
    # PARL's run_evaluate_episodes: reset, step until get_real_done(), mean of get_eval_rewards()
    env = wrap_deepmind(old_gym.make("BreakoutNoFrameskip-v4"), dim=84, obs_format="NCHW", test=True,
                        test_episodes=2)
    env.seed(3)
    obs = env.reset()
    assert obs.shape == (4, 84, 84)
    assert env.get_real_done() is False and env.get_eval_rewards() is None
    rng, dones, steps, game_returns = np.random.default_rng(0), 0, 0, []
    while not env.get_real_done():
        obs, _, done, info = env.step(int(rng.integers(env.action_space.n)))
        steps += 1
        if "episode" in info:  # PARL's ppo evaluation reads the whole game's return here
            game_returns.append(info["episode"]["r"])
        if done:
            dones += 1
            obs = env.reset()
        if steps > 20_000:
            pytest.fail("two random Breakout games did not end in 20,000 steps")
    monitor = get_wrapper_by_cls(env, MonitorEnv)
    assert dones == 2 * 5  # PARL's pipeline: each of Breakout's 5 lives ends an episode, the monitor counts games
    assert env.get_eval_rewards() == monitor.get_episode_rewards()[-2:] == game_returns
    assert len(monitor.get_episode_rewards()) == 2
    assert np.mean(env.get_eval_rewards()) >= 0.0


def test_a2c_actor_steps_a_vector_of_wrapped_envs_and_reads_their_monitors(old_gym):
    # as PARL's benchmark/torch/a2c actor: VectorEnv over wrap_deepmind envs, MonitorEnv for the metrics
    envs = [wrap_deepmind(old_gym.make("PongNoFrameskip-v4"), dim=42, obs_format="NCHW") for _ in range(2)]
    vector_env = VectorEnv(envs)
    obs_batch = np.stack(vector_env.reset())
    assert obs_batch.shape == (2, 4, 42, 42) and envs[0].observation_space.shape == (4, 42, 42)
    next_obs, rewards, dones, infos = vector_env.step([0, 1])
    assert np.stack(next_obs).shape == (2, 4, 42, 42) and len(rewards) == len(dones) == len(infos) == 2
    monitors = [get_wrapper_by_cls(env, MonitorEnv) for env in envs]
    assert all(isinstance(monitor, MonitorEnv) for monitor in monitors)
    assert [list(monitor.next_episode_results()) for monitor in monitors] == [[], []]
    assert monitors[0].get_total_steps() >= 1


def test_nhwc_frames_stack_on_the_last_axis(old_gym):
    env = wrap_deepmind(old_gym.make("PongNoFrameskip-v4"), dim=84)  # PARL's default obs_format
    assert env.reset().shape == (84, 84, 4) and env.observation_space.shape == (84, 84, 4)


def test_gymnasium_env_in_gymnasium_api_out():
    import ale_py
    import gymnasium

    gymnasium.register_envs(ale_py)
    env = wrap_deepmind(gymnasium.make("PongNoFrameskip-v4"), obs_format="NCHW")
    assert isinstance(env, gymnasium.Env)
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and isinstance(info, dict)
    assert len(env.step(0)) == 5


def test_non_atari_old_api_env_is_refused_with_the_fix(old_gym):
    with pytest.raises(ValueError, match="ale-py"):
        wrap_deepmind(old_gym.make("CartPole-v0"))


def test_step_takes_the_one_element_action_array_parls_ppo_predict_returns(old_gym):
    # PARL's ppo agent: predict() returns action.numpy().flatten(), shape (1,), straight into eval_env.step
    env = wrap_deepmind(old_gym.make("PongNoFrameskip-v4"), dim=84, obs_format="NCHW", test=True, test_episodes=1)
    env.reset()
    obs, reward, done, info = env.step(np.array([3], dtype=np.int64))
    assert obs.shape == (4, 84, 84) and isinstance(done, bool)
    env.step(np.int64(2))
    with pytest.raises(ValueError, match="one discrete action"):
        env.step(np.array([1, 2]))
