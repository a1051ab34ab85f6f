"""Every algorithm on both backends: a few learn steps on random data, weights round trip, save / restore
resumes exactly, sample shapes and per-algorithm behaviours. One test body per behaviour; the backend is a
pytest parameter."""

import math

import numpy as np
import pytest
from algo_models import ACT_DIM, NUM_ACTIONS, OBS_DIM, a2c, ppo_batch, transition

B = 8


def _transition(rng, discrete):
    return transition(rng, discrete, B)


def _ppo_batch(rng, discrete):
    return ppo_batch(rng, discrete, B)


def _a2c_batch(rng):
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=B).astype(np.float32), rng.normal(size=B).astype(np.float32))


def _a2c(M):
    return a2c(M)


def _a3c_batch(rng):
    return (*_a2c_batch(rng), 1e-2, -0.01)  # + learning_rate, entropy_coeff


def _impala_batch(rng):
    """Two unrolls of B / 2 steps, env-major, + learning_rate, entropy_coeff."""
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=(B, NUM_ACTIONS)).astype(np.float32), rng.normal(size=B).astype(np.float32),
            rng.random(B) < 0.2, 1e-2, -0.01)


# name -> (build the algorithm from the backend's models namespace, a learn batch from a numpy Generator,
# predict output shape)
CASES = {
    "PolicyGradient": (lambda M: M.algs.PolicyGradient(M.PGModel(), lr=1e-2),
                       lambda rng: (rng.normal(size=(B, OBS_DIM)).astype(np.float32),
                                    rng.integers(0, NUM_ACTIONS, size=B), rng.normal(size=B).astype(np.float32)),
                       (B, NUM_ACTIONS)),
    "DQN": (lambda M: M.algs.DQN(M.QModel(), gamma=0.99, lr=1e-2), lambda rng: _transition(rng, True),
            (B, NUM_ACTIONS)),
    "DDQN": (lambda M: M.algs.DDQN(M.QModel(), gamma=0.99, lr=1e-2, loss_type="huber"),
             lambda rng: _transition(rng, True), (B, NUM_ACTIONS)),
    "A2C": (_a2c, _a2c_batch, (B,)),
    "A3C": (lambda M: M.algs.A3C(M.DiscreteACModel(), vf_loss_coeff=0.5), _a3c_batch, (B,)),
    "IMPALA": (lambda M: M.algs.IMPALA(M.DiscreteACModel(), sample_batch_steps=B // 2), _impala_batch, (B,)),
    "PPO-discrete": (lambda M: M.algs.PPO(M.DiscreteACModel(), target_kl=None), lambda rng: _ppo_batch(rng, True),
                     (B,)),
    "PPO-continuous": (lambda M: M.algs.PPO(M.PPOGaussianModel(), continuous_action=True),
                       lambda rng: _ppo_batch(rng, False), (B, ACT_DIM)),
    "DDPG": (lambda M: M.algs.DDPG(M.DeterministicACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3),
             lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "TD3": (lambda M: M.algs.TD3(M.TwinCriticModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "SAC": (lambda M: M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.05, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "OAC": (lambda M: M.algs.OAC(M.SACModel(), gamma=0.99, tau=0.05, alpha=0.2, beta=4.66, delta=23.53,
                                 actor_lr=1e-3, critic_lr=1e-3),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "IQL": (lambda M: M.algs.IQL(M.IQLModel(), max_steps=100, lr=1e-3), lambda rng: _transition(rng, False),
            (B, ACT_DIM)),
    "SAC-auto-alpha": (lambda M: M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3,
                                            with_automatic_entropy_tuning=True),
                       lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "CQL": (lambda M: M.algs.CQL(M.SACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3,
                                 policy_eval_start=2),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "CQL-lagrange-v2": (lambda M: M.algs.CQL(M.SACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3,
                                             with_lagrange=True, min_q_version=2),
                        lambda rng: _transition(rng, False), (B, ACT_DIM)),
}


def _scalars(out):
    """The numbers of a learn output, nested tuples flattened (IMPALA: ``((total, pi, vf, entropy), kl)``)."""
    if isinstance(out, (tuple, list)):
        return [x for item in out for x in _scalars(item)]
    return [float(out)]


def _flat_weights(agent):
    return np.concatenate([w.ravel() for m in agent.alg.get_all_weights().values() for w in m.values()])


@pytest.mark.parametrize("name", sorted(CASES))
def test_learn_predict_and_weights_round_trip(name, M):
    build, batch, pred_shape = CASES[name]
    M.ops.seed(0)
    rng = np.random.default_rng(0)
    agent = M.Agent(build(M))
    before = agent.alg.get_all_weights()
    obs = rng.normal(size=(B, OBS_DIM)).astype(np.float32)
    pred_before = agent.predict(obs)
    assert np.shape(pred_before) == pred_shape
    for _ in range(4):
        losses = _scalars(agent.learn(*batch(rng)))
        assert all(math.isfinite(x) for x in losses), losses
    main = agent.alg.model.get_weights()
    assert any(not np.array_equal(main[k], before["model"][k]) for k in main), "learn() did not change the model"
    agent.set_weights(before)
    np.testing.assert_array_equal(agent.predict(obs), pred_before)
    if "target_model" in before:  # target networks are part of the weights
        np.testing.assert_array_equal(agent.alg.target_model.get_weights()[next(iter(main))],
                                      before["target_model"][next(iter(main))])


@pytest.mark.parametrize("name", sorted(CASES))
def test_save_restore_resumes_identically(name, M, tmp_path):
    build, batch, _ = CASES[name]
    M.ops.seed(1)
    agent = M.Agent(build(M))
    rng = np.random.default_rng(1)
    for _ in range(3):
        agent.learn(*batch(rng))
    agent.save(tmp_path / "ckpt.pt")
    next_batches = [batch(rng) for _ in range(3)]
    M.ops.seed(7)
    expected = [_scalars(agent.learn(*b)) for b in next_batches]
    expected_w = _flat_weights(agent)

    M.ops.seed(2)
    fresh = M.Agent(build(M))
    fresh.restore(tmp_path / "ckpt.pt")
    M.ops.seed(7)
    got = [_scalars(fresh.learn(*b)) for b in next_batches]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_flat_weights(fresh), expected_w, rtol=1e-6, atol=1e-7)


def test_sample_shapes(M):
    M.ops.seed(0)
    obs = np.random.default_rng(0).normal(size=(B, OBS_DIM)).astype(np.float32)
    shape = lambda t: tuple(M.ops.numpy(t).shape)  # noqa: E731
    lead = (1,) if M.ops.name == "paddle" else ()  # PARL's paddle PPO samples dist.sample([1]): a leading axis of 1
    value, action, logp, ent = M.algs.PPO(M.DiscreteACModel()).sample(obs)
    assert shape(value) == (B, 1) and shape(action) == (*lead, B) and shape(logp) == (*lead, B)
    assert shape(ent) == (B,)
    value, action, logp, ent = M.algs.PPO(M.PPOGaussianModel(), continuous_action=True).sample(obs)
    assert shape(action) == (*lead, B, ACT_DIM) and shape(logp) == (*lead, B)
    sac = M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3)
    action, logp = sac.sample(obs)
    assert shape(action) == (B, ACT_DIM) and shape(logp) == (B, 1) and bool((np.abs(M.ops.numpy(action)) <= 1).all())
    action, value = _a2c(M).sample(obs)
    assert shape(action) == (B,) and shape(value) == (B,)
    dqn = M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3)
    greedy = M.ops.numpy(dqn.predict(obs)).argmax(1)
    np.testing.assert_array_equal(M.ops.numpy(dqn.sample(obs, epsilon=0.0)), greedy)
    assert set(M.ops.numpy(dqn.sample(np.repeat(obs, 50, axis=0), epsilon=1.0)).tolist()) == set(range(NUM_ACTIONS))


def _ppo_on_policy_batch(M, alg):
    batch = _ppo_batch(np.random.default_rng(0), True)
    _, action, logp, _ = alg.sample(batch[0])
    # (paddle's sample has a leading axis of 1, as PARL's: drop it)
    batch[1], batch[4] = M.ops.numpy(action).reshape(batch[1].shape), M.ops.numpy(logp).reshape(batch[4].shape).copy()
    return batch


def test_ppo_diagnostics_and_kl_early_stop(M):
    M.ops.seed(0)
    alg = M.algs.PPO(M.DiscreteACModel(), initial_lr=0.5, target_kl=0.01)
    batch = _ppo_on_policy_batch(M, alg)
    value_loss, action_loss, entropy = alg.learn(*batch)
    assert isinstance(value_loss, float) and isinstance(entropy, float)
    assert alg.last_info["train/approx_kl"] == pytest.approx(0.0, abs=1e-6)  # same policy before the step
    assert alg.last_info["train/clip_fraction"] == 0.0
    for _ in range(5):  # huge lr: the policy moves far from the behaviour policy
        alg.learn(*batch)
        if alg.kl_exceeded:
            break
    assert alg.kl_exceeded and alg.last_info["train/kl_exceeded"] == 1.0 and alg.last_info["train/approx_kl"] > 0.01
    weights = alg.model.get_weights()
    alg.learn(*batch)  # over the KL target: the update is skipped
    after = alg.model.get_weights()
    assert all(np.array_equal(weights[k], after[k]) for k in weights)


def test_ppo_last_info_describes_the_last_learn_call(M):
    import importlib

    functional = importlib.import_module(f"parl_algorithms.{M.ops.name}.functional")
    M.ops.seed(0)
    alg = M.algs.PPO(M.DiscreteACModel(), initial_lr=0.05, clip_param=0.1)
    assert alg.last_info == {}
    batch = _ppo_on_policy_batch(M, alg)
    alg.learn(*batch)
    alg.learn(*batch)
    obs, action = batch[0], batch[1]
    policy = alg._policy(_tensor(M, obs))  # the policy the third learn sees (before its step)
    new_logp = alg._log_prob_entropy(policy, _tensor(M, action))[0].detach()
    value_loss, _, _ = alg.learn(*batch)
    alg.clip_param = 0.5  # a later change must not alter the recorded diagnostics
    info = alg.last_info
    logp = _tensor(M, batch[4])
    assert info["train/value_loss"] == value_loss
    assert info["train/approx_kl"] == pytest.approx(float(functional.approx_kl(new_logp, logp)), rel=1e-5)
    assert info["train/approx_kl"] > 0
    expected_clipfrac = float(functional.clip_fraction(new_logp, logp, 0.1))
    assert info["train/clip_fraction"] == pytest.approx(expected_clipfrac) and 0 < expected_clipfrac <= 1
    assert alg.last_info is info  # computed once per learn


def _tensor(M, array):
    if M.ops.name == "torch":
        import torch

        return torch.as_tensor(array)
    import paddle

    return paddle.to_tensor(array)


def test_td3_delays_actor_and_sac_tunes_alpha(M):
    rng = np.random.default_rng(0)
    td3 = M.algs.TD3(M.TwinCriticModel(), gamma=0.99, tau=0.1, actor_lr=1e-2, critic_lr=1e-2, policy_freq=2)
    actor = lambda: [M.ops.numpy(p).copy() for p in td3.model.get_actor_params()]  # noqa: E731
    actor0 = actor()
    td3.learn(*_transition(rng, False))
    assert all(np.array_equal(a, p) for a, p in zip(actor0, actor(), strict=True))
    td3.learn(*_transition(rng, False))
    assert not all(np.array_equal(a, p) for a, p in zip(actor0, actor(), strict=True))
    assert td3.total_it == 2

    sac = M.algs.SAC(M.SACModel(), gamma=0.99, tau=0.1, actor_lr=1e-2, critic_lr=1e-2, alpha=0.5,
                     with_automatic_entropy_tuning=True)
    sac.learn(*_transition(rng, False))
    assert sac.alpha != 0.5 and sac.last_info["train/alpha"] == sac.alpha


def test_sync_target_is_polyak_average_and_state_has_no_extra_tensors(M):
    M.ops.seed(0)
    alg = M.algs.TD3(M.TwinCriticModel(), gamma=0.99, tau=0.1, actor_lr=1e-3, critic_lr=1e-3)
    alg.model.set_weights({k: v + 1.0 for k, v in alg.model.get_weights().items()})
    before_t = {k: v.copy() for k, v in alg.target_model.get_weights().items()}
    source = alg.model.get_weights()
    alg.sync_target()  # decay = 1 - tau = 0.9
    after = alg.target_model.get_weights()
    for k in source:
        np.testing.assert_allclose(after[k], 0.9 * before_t[k] + 0.1 * source[k], rtol=1e-5, atol=1e-6)
    alg.sync_target(decay=0.0)
    for k, v in alg.target_model.get_weights().items():
        np.testing.assert_array_equal(v, source[k])
    assert set(alg.state_dict()) == {"model", "target_model", "actor_optimizer", "critic_optimizer", "total_it",
                                     "_last_actor_loss"}


def test_dqn_predict_takes_one_unbatched_observation_as_parls_examples_pass(M):
    # PARL 2.2.1's examples/DQN/cartpole_agent.py calls alg.predict(paddle.to_tensor(obs)) on obs [obs_dim]
    dqn = M.algs.DQN(M.QModel(), gamma=0.9, lr=1e-3)
    obs = np.random.default_rng(0).normal(size=(3, OBS_DIM)).astype(np.float32)
    batched = M.ops.numpy(dqn.predict(obs))
    single = M.ops.numpy(dqn.predict(obs[1]))
    assert single.shape == (NUM_ACTIONS,)
    np.testing.assert_allclose(single, batched[1], rtol=1e-6)
