"""Every algorithm: a few learn steps on random data, weights round trip, save / restore resumes exactly."""

import math

import numpy as np
import pytest
import torch
from algo_models import (
    ACT_DIM,
    NUM_ACTIONS,
    OBS_DIM,
    DeterministicACModel,
    DiscreteACModel,
    GaussianACModel,
    QModel,
    SACModel,
    TwinCriticModel,
)

import parl_algorithms as algs
from parl_core.torch import Agent

B = 8


def _transition(rng, discrete):
    action = rng.integers(0, NUM_ACTIONS, size=(B, 1)) if discrete else rng.uniform(-1, 1, (B, ACT_DIM))
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), action.astype(np.int64 if discrete else np.float32),
            rng.normal(size=(B, 1)).astype(np.float32), rng.normal(size=(B, OBS_DIM)).astype(np.float32),
            (rng.random((B, 1)) < 0.2).astype(np.float32))


def _ppo_batch(rng, discrete):
    action = rng.integers(0, NUM_ACTIONS, size=B) if discrete else rng.normal(size=(B, ACT_DIM)).astype(np.float32)
    f = lambda: rng.normal(size=B).astype(np.float32)  # noqa: E731
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), action, f(), f(), f() - 1.0, f())


def _a2c_batch(rng):
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=B).astype(np.float32), rng.normal(size=B).astype(np.float32))


def _pg_model():
    class PGModel(QModel):
        def forward(self, obs):
            return torch.softmax(self.net(obs), -1)
    return PGModel()


# name -> (build algorithm, make a learn batch from a numpy Generator, predict output shape)
CASES = {
    "PolicyGradient": (lambda: algs.PolicyGradient(_pg_model(), lr=1e-2),
                       lambda rng: (rng.normal(size=(B, OBS_DIM)).astype(np.float32),
                                    rng.integers(0, NUM_ACTIONS, size=B), rng.normal(size=B).astype(np.float32)),
                       (B, NUM_ACTIONS)),
    "DQN": (lambda: algs.DQN(QModel(), gamma=0.99, lr=1e-2), lambda rng: _transition(rng, True), (B, NUM_ACTIONS)),
    "DDQN": (lambda: algs.DDQN(QModel(), gamma=0.99, lr=1e-2, loss_type="huber"), lambda rng: _transition(rng, True),
             (B, NUM_ACTIONS)),
    "A2C": (lambda: algs.A2C(DiscreteACModel(), {"vf_loss_coeff": 0.5, "learning_rate": 1e-2}), _a2c_batch, (B,)),
    "PPO-discrete": (lambda: algs.PPO(DiscreteACModel(), target_kl=None), lambda rng: _ppo_batch(rng, True), (B,)),
    "PPO-continuous": (lambda: algs.PPO(GaussianACModel(), continuous_action=True),
                       lambda rng: _ppo_batch(rng, False), (B, ACT_DIM)),
    "DDPG": (lambda: algs.DDPG(DeterministicACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3),
             lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "TD3": (lambda: algs.TD3(TwinCriticModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "SAC": (lambda: algs.SAC(SACModel(), gamma=0.99, tau=0.05, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "SAC-auto-alpha": (lambda: algs.SAC(SACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3,
                                        with_automatic_entropy_tuning=True),
                       lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "CQL": (lambda: algs.CQL(SACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3, policy_eval_start=2),
            lambda rng: _transition(rng, False), (B, ACT_DIM)),
    "CQL-lagrange-v2": (lambda: algs.CQL(SACModel(), gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3,
                                         with_lagrange=True, min_q_version=2),
                        lambda rng: _transition(rng, False), (B, ACT_DIM)),
}


def _scalars(out):
    items = out if isinstance(out, tuple) else (out,)
    return [float(x) for x in items]


def _flat_weights(agent):
    return np.concatenate([w.ravel() for m in agent.alg.get_all_weights().values() for w in m.values()])


@pytest.mark.parametrize("name", sorted(CASES))
def test_learn_predict_and_weights_round_trip(name):
    build, batch, pred_shape = CASES[name]
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    agent = Agent(build())
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
def test_save_restore_resumes_identically(name, tmp_path):
    build, batch, _ = CASES[name]
    torch.manual_seed(1)
    agent = Agent(build())
    rng = np.random.default_rng(1)
    for _ in range(3):
        agent.learn(*batch(rng))
    agent.save(tmp_path / "ckpt.pt")
    next_batches = [batch(rng) for _ in range(3)]
    torch.manual_seed(7)
    expected = [_scalars(agent.learn(*b)) for b in next_batches]
    expected_w = _flat_weights(agent)

    torch.manual_seed(2)
    fresh = Agent(build())
    fresh.restore(tmp_path / "ckpt.pt")
    torch.manual_seed(7)
    got = [_scalars(fresh.learn(*b)) for b in next_batches]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_flat_weights(fresh), expected_w, rtol=1e-6, atol=1e-7)


def test_sample_shapes():
    torch.manual_seed(0)
    obs = torch.randn(B, OBS_DIM)
    value, action, logp, ent = algs.PPO(DiscreteACModel()).sample(obs)
    assert value.shape == (B, 1) and action.shape == (B,) and logp.shape == (B,) and ent.shape == (B,)
    value, action, logp, ent = algs.PPO(GaussianACModel(), continuous_action=True).sample(obs)
    assert action.shape == (B, ACT_DIM) and logp.shape == (B,)
    action, logp = algs.SAC(SACModel(), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3).sample(obs)
    assert action.shape == (B, ACT_DIM) and logp.shape == (B, 1) and bool((action.abs() <= 1).all())
    action, value = algs.A2C(DiscreteACModel()).sample(obs)
    assert action.shape == (B,) and value.shape == (B,)
    dqn = algs.DQN(QModel(), gamma=0.9, lr=1e-3)
    greedy = dqn.predict(obs).argmax(1)
    assert torch.equal(dqn.sample(obs, epsilon=0.0), greedy)
    assert set(dqn.sample(obs.repeat(50, 1), epsilon=1.0).tolist()) == set(range(NUM_ACTIONS))


def test_ppo_diagnostics_and_kl_early_stop():
    torch.manual_seed(0)
    alg = algs.PPO(DiscreteACModel(), initial_lr=0.5, target_kl=0.01)
    rng = np.random.default_rng(0)
    batch = [torch.as_tensor(x) for x in _ppo_batch(rng, True)]
    with torch.no_grad():
        _, action, logp, _ = alg.sample(batch[0])
    batch[1], batch[4] = action, logp.clone()
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


def test_ppo_last_info_describes_the_last_learn_call():
    # last_info's approx-KL / clip fraction are computed when read: they must still be those of the last learn
    from parl_algorithms.torch import functional

    torch.manual_seed(0)
    alg = algs.PPO(DiscreteACModel(), initial_lr=0.05, clip_param=0.1)
    assert alg.last_info == {}
    rng = np.random.default_rng(0)
    batch = [torch.as_tensor(x) for x in _ppo_batch(rng, True)]
    with torch.no_grad():
        _, action, logp, _ = alg.sample(batch[0])
    batch[1], batch[4] = action, logp.clone()
    alg.learn(*batch)
    alg.learn(*batch)
    with torch.no_grad():  # the policy the third learn sees (before its step)
        new_logp = alg._log_prob_entropy(alg._policy(batch[0]), action)[0]
    value_loss, _, _ = alg.learn(*batch)
    alg.clip_param = 0.5  # a later change must not alter the recorded diagnostics
    info = alg.last_info
    assert info["train/value_loss"] == value_loss
    assert info["train/approx_kl"] == pytest.approx(float(functional.approx_kl(new_logp, logp)), rel=1e-5)
    assert info["train/approx_kl"] > 0
    expected_clipfrac = float(functional.clip_fraction(new_logp, logp, 0.1))
    assert info["train/clip_fraction"] == pytest.approx(expected_clipfrac) and 0 < expected_clipfrac <= 1
    assert alg.last_info is info  # computed once per learn


def test_td3_delays_actor_and_sac_tunes_alpha():
    rng = np.random.default_rng(0)
    td3 = algs.TD3(TwinCriticModel(), gamma=0.99, tau=0.1, actor_lr=1e-2, critic_lr=1e-2, policy_freq=2)
    actor0 = [p.detach().clone() for p in td3.model.get_actor_params()]
    td3.learn(*[torch.as_tensor(x) for x in _transition(rng, False)])
    assert all(torch.equal(a, p) for a, p in zip(actor0, td3.model.get_actor_params(), strict=True))
    td3.learn(*[torch.as_tensor(x) for x in _transition(rng, False)])
    assert not all(torch.equal(a, p) for a, p in zip(actor0, td3.model.get_actor_params(), strict=True))
    assert td3.total_it == 2

    sac = algs.SAC(SACModel(), gamma=0.99, tau=0.1, actor_lr=1e-2, critic_lr=1e-2, alpha=0.5,
                   with_automatic_entropy_tuning=True)
    sac.learn(*[torch.as_tensor(x) for x in _transition(rng, False)])
    assert sac.alpha != 0.5 and sac.last_info["train/alpha"] == sac.alpha


def test_sync_target_is_polyak_average_and_state_has_no_extra_tensors():
    torch.manual_seed(0)
    alg = algs.TD3(TwinCriticModel(), gamma=0.99, tau=0.1, actor_lr=1e-3, critic_lr=1e-3)
    with torch.no_grad():
        for p in alg.model.parameters():
            p.add_(1.0)
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
