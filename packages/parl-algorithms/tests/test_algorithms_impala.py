"""IMPALA: learn on random time-major unrolls, weights round trip, save / restore resumes exactly, bad input."""

import math

import numpy as np
import pytest
import torch
from algo_models import NUM_ACTIONS, OBS_DIM, models

import parl_algorithms.torch as algs
from parl_algorithms.vtrace import from_importance_weights
from parl_core.torch import Agent, Model

_TORCH = models("torch")  # these algorithms are torch-only
DiscreteACModel = _TORCH.DiscreteACModel
GaussianACModel = _TORCH.GaussianACModel

T, E = 5, 3
B = T * E


def _batch(rng):
    """(obs, actions, behaviour_logits, rewards, dones) of E unrolls of T steps, time-major."""
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=(B, NUM_ACTIONS)).astype(np.float32), rng.normal(size=B).astype(np.float32),
            rng.random(B) < 0.2)


def _impala(**kwargs):
    return algs.IMPALA(DiscreteACModel(), sample_batch_steps=T, gamma=0.9, vf_loss_coeff=0.5,
                       clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0, **kwargs)


def _flat_weights(alg):
    return np.concatenate([w.ravel() for w in alg.model.get_weights().values()])


def test_learn_changes_weights_and_round_trip():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    agent = Agent(_impala())
    before = agent.get_weights()
    obs = rng.normal(size=(B, OBS_DIM)).astype(np.float32)
    greedy = agent.predict(obs)
    assert np.shape(greedy) == (B,)
    for _ in range(4):
        losses, kl = agent.alg.learn(*_batch(rng), 1e-2, -0.01)
        values = [float(x) for x in (*losses, kl)]
        assert all(math.isfinite(v) for v in values), values
        assert float(kl) >= 0.0
    info = agent.alg.get_info()
    assert set(info) >= {"train/pi_loss", "train/vf_loss", "train/entropy", "train/kl", "train/grad_norm"}
    after = agent.alg.model.get_weights()
    assert any(not np.array_equal(after[k], before[k]) for k in after), "learn() did not change the model"
    agent.set_weights(before)
    np.testing.assert_array_equal(agent.predict(obs), greedy)


def test_loss_is_the_vtrace_actor_critic_loss():
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    alg = _impala()
    obs, actions, behaviour, rewards, dones = _batch(rng)
    with torch.no_grad():
        logits, values = alg.model.policy(torch.as_tensor(obs)), alg.model.value(torch.as_tensor(obs)).squeeze(1)
    log_pi = torch.log_softmax(logits, -1)[torch.arange(B), torch.as_tensor(actions)]
    log_mu = torch.log_softmax(torch.as_tensor(behaviour), -1)[torch.arange(B), torch.as_tensor(actions)]
    tb = lambda x: torch.as_tensor(x, dtype=torch.float32).reshape(T, E)  # noqa: E731 (time-major rows)
    vt = from_importance_weights(tb(log_mu)[:-1], tb(log_pi)[:-1], (1 - tb(dones)[:-1]) * 0.9, tb(rewards)[:-1],
                                 tb(values)[:-1], tb(values)[-1])
    probs = torch.softmax(logits, -1)
    entropy = -(probs * torch.log_softmax(logits, -1)).sum(-1)
    expected_pi = -float((tb(log_pi)[:-1] * vt.pg_advantages).sum())
    expected_vf = 0.5 * float(((tb(values)[:-1] - vt.vs) ** 2).sum())
    expected_entropy = float(tb(entropy)[:-1].sum())
    losses, _ = alg.learn(obs, actions, behaviour, rewards, dones, 1e-3, -0.01)
    assert float(losses.pi_loss) == pytest.approx(expected_pi, rel=1e-5)
    assert float(losses.vf_loss) == pytest.approx(expected_vf, rel=1e-5)
    assert float(losses.entropy) == pytest.approx(expected_entropy, rel=1e-5)
    assert float(losses.total_loss) == pytest.approx(expected_pi + 0.5 * expected_vf - 0.01 * expected_entropy,
                                                     rel=1e-5)


def test_sample_and_predict_shapes():
    torch.manual_seed(0)
    alg = _impala()
    obs = torch.randn(64, OBS_DIM)
    actions, logits = alg.sample(obs)
    assert actions.dtype == torch.int64 and actions.shape == (64,) and logits.shape == (64, NUM_ACTIONS)
    assert set(actions.tolist()) <= set(range(NUM_ACTIONS)) and len(set(actions.tolist())) > 1
    assert torch.equal(alg.predict(obs), logits.argmax(1))


def test_save_restore_resumes_identically(tmp_path):
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    agent = Agent(_impala())
    for _ in range(3):
        agent.alg.learn(*_batch(rng), 1e-2, -0.01)
    agent.save(tmp_path / "ckpt.pt")
    batches = [_batch(rng) for _ in range(3)]
    expected = [float(agent.alg.learn(*b, 1e-2, -0.01)[0].total_loss) for b in batches]
    expected_w = _flat_weights(agent.alg)
    torch.manual_seed(2)
    fresh = Agent(_impala())
    fresh.restore(tmp_path / "ckpt.pt")
    got = [float(fresh.alg.learn(*b, 1e-2, -0.01)[0].total_loss) for b in batches]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(_flat_weights(fresh.alg), expected_w, rtol=1e-6, atol=1e-7)


def _replace(batch, index, value):
    batch = list(batch)
    batch[index] = value
    return batch


@pytest.mark.parametrize("index, value, match", [
    (2, np.zeros((B, NUM_ACTIONS + 1), np.float32), r"behaviour_logits must be .*\[B=15, num_actions=3\]"),
    (2, np.zeros(B, np.float32), r"behaviour_logits must be"),
    (3, np.zeros((B, 2), np.float32), r"rewards must have shape \[B\]"),
    (4, np.zeros(B + 1), r"dones must have shape \[B\]"),
    (1, np.full((B, 2), 0.3, np.float32), r"discrete action spaces"),
])
def test_bad_learn_input_is_named(index, value, match):
    batch = _replace(_batch(np.random.default_rng(0)), index, value)
    with pytest.raises(ValueError, match=match):
        _impala().learn(*batch, 1e-3, -0.01)


def test_batch_not_a_multiple_of_the_unroll_length():
    obs, actions, behaviour, rewards, dones = _batch(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"B=14 must be a whole number of unrolls of sample_batch_steps=5"):
        _impala().learn(obs[:-1], actions[:-1], behaviour[:-1], rewards[:-1], dones[:-1], 1e-3, -0.01)


def test_continuous_policy_is_refused():
    alg = algs.IMPALA(GaussianACModel(), sample_batch_steps=T)
    with pytest.raises(ValueError, match="IMPALA supports Discrete action spaces only"):
        alg.sample(torch.randn(4, OBS_DIM))


class _NoValue(Model):
    def __init__(self):
        super().__init__()
        self.pi = torch.nn.Linear(OBS_DIM, NUM_ACTIONS)

    def policy(self, obs):
        return self.pi(obs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(model=_NoValue(), sample_batch_steps=T), "value"),
    (dict(model=DiscreteACModel()), "IMPALA needs sample_batch_steps"),
    (dict(model=DiscreteACModel(), sample_batch_steps=1), "IMPALA needs sample_batch_steps"),
    (dict(model=DiscreteACModel(), sample_batch_steps=T, gamma=1.5), "gamma in"),
    (dict(model=DiscreteACModel(), sample_batch_steps=T, clip_rho_threshold=0.0), "clip_rho_threshold > 0"),
])
def test_bad_construction_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        algs.IMPALA(**kwargs)
