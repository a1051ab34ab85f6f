"""EnvPoolMuJoCo (parl_core.env.envpool_mujoco) against gymnasium's MuJoCo tasks on the same actions.

The initial states are made seed-independent (``reset_noise_scale=0`` on both sides: every episode starts at
the model's ``init_qpos`` / ``init_qvel``), so the two paths must give the same trajectories: observations and
rewards equal to round-off, the same episode ends, and gymnasium's NEXT_STEP auto-reset. The free-floating
tasks (Ant, Humanoid) are checked for the documented difference instead.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from parl_core.env.envpool_mujoco import MATCHED_TASKS, EnvPoolMuJoCo

gym = pytest.importorskip("gymnasium")
pytest.importorskip("mujoco")


def test_missing_envpool_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)  # `import envpool` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'parl-core\[envpool\]'"):
        EnvPoolMuJoCo("Hopper-v5", 2)


def test_unmatched_and_unknown_ids_are_refused():
    pytest.importorskip("envpool")
    with pytest.raises(ValueError, match="allow_unmatched=True"):
        EnvPoolMuJoCo("Ant-v5", 1)
    with pytest.raises(ValueError, match="Hopper-v5"):  # the message lists the matched ids
        EnvPoolMuJoCo("CartPole-v1", 1)
    assert {"HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "HalfCheetah-v4"} <= MATCHED_TASKS


def _trajectories(env_id: str, steps: int, num_envs: int = 2, **kwargs):
    """(gymnasium's, EnvPool's) stacked (obs, reward, terminated, truncated) over ``steps`` steps of the same
    uniform random actions, both without initial-state noise."""
    ours = EnvPoolMuJoCo(env_id, num_envs, reset_noise_scale=0.0, **kwargs)
    theirs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", reset_noise_scale=0.0)
    assert ours.single_observation_space.shape == theirs.single_observation_space.shape
    assert ours.single_action_space == theirs.single_action_space
    assert ours.metadata["autoreset_mode"] == theirs.metadata["autoreset_mode"]
    rng = np.random.default_rng(0)
    out = []
    for env in (theirs, ours):
        rows = [(env.reset(seed=0)[0], np.zeros(num_envs), np.zeros(num_envs, bool), np.zeros(num_envs, bool))]
        rng = np.random.default_rng(0)
        for _ in range(steps):
            rows.append(env.step(rng.uniform(-1.0, 1.0, env.action_space.shape).astype(np.float32))[:4])
        env.close()
        out.append([np.stack(column) for column in zip(*rows, strict=True)])
    return out


@pytest.mark.parametrize("env_id", ["Hopper-v5", "Walker2d-v5", "Hopper-v4"])
def test_same_trajectories_across_episode_ends(env_id):
    """Hopper / Walker2d fall within ~30-50 random steps: several episodes, the resets included."""
    (obs_g, rew_g, term_g, trunc_g), (obs_p, rew_p, term_p, trunc_p) = _trajectories(env_id, 120)
    assert obs_p.dtype == obs_g.dtype == np.float64
    assert term_g.sum() >= 4  # episodes ended, and the NEXT_STEP resets were compared too
    np.testing.assert_array_equal(term_p, term_g)
    np.testing.assert_array_equal(trunc_p, trunc_g)
    np.testing.assert_allclose(obs_p, obs_g, rtol=0, atol=1e-9)
    np.testing.assert_allclose(rew_p, rew_g, rtol=0, atol=1e-6)  # EnvPool computes rewards in float32
    after_end = np.nonzero(term_g[:-1])
    assert (rew_p[1:][after_end] == 0).all()  # the reset step: reward 0 ...
    np.testing.assert_allclose(obs_p[1:][after_end], obs_p[0][after_end[1]], atol=1e-12)  # ... the initial state


def test_halfcheetah_same_trajectory_until_chaos_amplifies_round_off():
    (obs_g, rew_g, *_), (obs_p, rew_p, *_) = _trajectories("HalfCheetah-v5", 40)
    np.testing.assert_allclose(obs_p, obs_g, rtol=0, atol=1e-8)
    np.testing.assert_allclose(rew_p, rew_g, rtol=0, atol=1e-6)


def test_truncation_at_the_step_limit_and_seeded_initial_noise():
    pool = EnvPoolMuJoCo("InvertedPendulum-v5", 2, seed=3)
    obs_a, _ = pool.reset()
    obs_b, _ = pool.reset(seed=3)  # rebuilt with the same seed: the same initial states
    np.testing.assert_array_equal(obs_a, obs_b)
    assert np.abs(obs_a).max() <= 0.01 and not np.array_equal(obs_a[0], obs_a[1])  # uniform noise of scale 0.01
    pool.close()
    pool = EnvPoolMuJoCo("Swimmer-v5", 1, max_episode_steps=5)
    pool.reset()
    ends = [pool.step(np.zeros((1, 2)))[2:4] for _ in range(5)]
    assert [bool(t[0]) for _, t in ends] == [False] * 4 + [True] and not any(bool(t[0]) for t, _ in ends)
    pool.close()


def test_free_floating_torso_differs_as_documented():
    """Ant: the same task, but after one step the torso's orientation (obs 1..4) differs by more than round-off."""
    (obs_g, *_), (obs_p, *_) = _trajectories("Ant-v5", 1, num_envs=1, allow_unmatched=True)
    np.testing.assert_array_equal(obs_p[0], obs_g[0])  # the same initial state
    diff = np.abs(obs_p[1] - obs_g[1])[0]
    assert 1e-12 < diff.max() < 1e-4
    assert diff[5:13].max() < 1e-12  # the hinge joints' angles agree


def test_step_envs_steps_only_the_given_envs_in_their_order():
    """ES's lockstep episodes: ``step_envs`` moves envs [2, 0] (rows in that order) and leaves env 1 as it was."""
    pytest.importorskip("envpool")
    pool = EnvPoolMuJoCo("Hopper-v5", 3, reset_noise_scale=0.0)
    ref = gym.make("Hopper-v5", reset_noise_scale=0.0)
    first = ref.reset(seed=0)[0]
    np.testing.assert_array_equal(pool.reset()[0], np.stack([first] * 3))
    a0, a2 = np.full(3, 0.5), np.full(3, -0.5)
    obs, reward, terminated, truncated = pool.step_envs(np.stack([a2, a0]), np.array([2, 0]))
    assert obs.shape == (2, 11) and reward.shape == terminated.shape == truncated.shape == (2,)
    expected = []
    for action in (a2, a0):
        ref.reset(seed=0)
        expected.append(ref.step(action)[0])
    np.testing.assert_allclose(obs, np.stack(expected), rtol=0, atol=1e-12)
    obs_all = pool.step(np.stack([a0, a0, a0]))[0]  # env 1's first step now: as env 0's was
    np.testing.assert_allclose(obs_all[1], expected[1], rtol=0, atol=1e-12)
    pool.close()
