"""IMPALA on both backends (backend a pytest parameter): learn on random env-major unrolls (PARL's layout),
the loss against V-trace computed independently in numpy, sample / predict outputs, bad input. The weights
round trip and save / restore are in test_algorithms_smoke.py, the paddle-vs-torch update in
test_algorithms_equivalence.py."""

import math

import numpy as np
import pytest
from algo_models import NUM_ACTIONS, OBS_DIM, paper_vtrace

T, E = 5, 3
B = T * E


def _batch(rng):
    """(obs, actions, behaviour_logits, rewards, dones) of E unrolls of T steps, env-major (row e * T + t)."""
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=(B, NUM_ACTIONS)).astype(np.float32), rng.normal(size=B).astype(np.float32),
            rng.random(B) < 0.2)


def _impala(M, model=None, **kwargs):
    model = M.DiscreteACModel() if model is None else model
    return M.algs.IMPALA(model, sample_batch_steps=T, gamma=0.9, vf_loss_coeff=0.5, clip_rho_threshold=1.0,
                         clip_pg_rho_threshold=1.0, **kwargs)


def _tensor(M, array):
    if M.ops.name == "torch":
        import torch

        return torch.as_tensor(array)
    import paddle

    return paddle.to_tensor(array)


def test_learn_reports_losses_kl_and_diagnostics(M):
    M.ops.seed(0)
    rng = np.random.default_rng(0)
    agent = M.Agent(_impala(M))
    for _ in range(4):
        losses, kl = agent.alg.learn(*_batch(rng), 1e-2, -0.01)
        values = [float(x) for x in (*losses, kl)]
        assert all(math.isfinite(v) for v in values), values
        assert float(kl) >= 0.0
        assert losses._fields == ("total_loss", "pi_loss", "vf_loss", "entropy")
    info = agent.alg.get_info()
    assert set(info) >= {"train/pi_loss", "train/vf_loss", "train/entropy", "train/kl", "train/grad_norm"}
    assert info["train/kl"] == pytest.approx(float(kl), rel=1e-6) and info["train/grad_norm"] > 0
    (total, pi_loss, vf_loss, entropy), kl = agent.learn(*_batch(rng), 1e-2, -0.01)  # through the Agent: numbers
    assert all(isinstance(x, float) for x in (total, pi_loss, vf_loss, entropy, kl))


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_loss_is_the_vtrace_actor_critic_loss(M):
    M.ops.seed(0)
    rng = np.random.default_rng(3)
    alg = _impala(M)
    obs, actions, behaviour, rewards, dones = _batch(rng)
    logits = M.ops.numpy(alg.model.policy(_tensor(M, obs))).astype(np.float64)
    values = M.ops.numpy(alg.model.value(_tensor(M, obs)))[:, 0].astype(np.float64)
    log_p = _log_softmax(logits)
    log_pi, log_mu = log_p[np.arange(B), actions], _log_softmax(behaviour.astype(np.float64))[np.arange(B), actions]
    entropy = -(np.exp(log_p) * log_p).sum(-1)
    tb = lambda x: np.asarray(x, dtype=np.float64).reshape(E, T).T  # noqa: E731 (env-major rows -> [T, E])
    vs, pg_adv = paper_vtrace(tb(log_mu)[:-1], tb(log_pi)[:-1], (1 - tb(dones)[:-1]) * 0.9, tb(rewards)[:-1],
                               tb(values)[:-1], tb(values)[-1], 1.0, 1.0)
    expected_pi = -float((tb(log_pi)[:-1] * pg_adv).sum())
    expected_vf = 0.5 * float(((tb(values)[:-1] - vs) ** 2).sum())
    expected_entropy = float(tb(entropy)[:-1].sum())
    losses, _ = alg.learn(obs, actions, behaviour, rewards, dones, 1e-3, -0.01)
    assert float(losses.pi_loss) == pytest.approx(expected_pi, rel=1e-5)
    assert float(losses.vf_loss) == pytest.approx(expected_vf, rel=1e-5)
    assert float(losses.entropy) == pytest.approx(expected_entropy, rel=1e-5)
    assert float(losses.total_loss) == pytest.approx(expected_pi + 0.5 * expected_vf - 0.01 * expected_entropy,
                                                     rel=1e-5)


def test_sample_returns_probs_and_logits_and_predict_is_greedy(M):
    M.ops.seed(0)
    alg = _impala(M)
    obs = np.random.default_rng(0).normal(size=(64, OBS_DIM)).astype(np.float32)
    probs, logits = (M.ops.numpy(x) for x in alg.sample(obs))  # PARL's (probs, logits)
    assert probs.dtype == np.float32 and probs.shape == (64, NUM_ACTIONS) and logits.shape == (64, NUM_ACTIONS)
    np.testing.assert_allclose(probs, np.exp(_log_softmax(logits.astype(np.float64))), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    drawn = [np.random.choice(len(p), 1, p=p)[0] for p in probs]  # as PARL's AtariAgent.sample draws actions
    assert set(drawn) <= set(range(NUM_ACTIONS)) and len(set(drawn)) > 1
    np.testing.assert_array_equal(logits, M.ops.numpy(alg.model.policy(_tensor(M, obs))))
    np.testing.assert_array_equal(M.ops.numpy(alg.predict(obs)), logits.argmax(1))


def test_learn_bootstraps_from_the_last_step_of_each_env_major_unroll(M):
    """Rows e * T + t: with rewards only on each unroll's last row (the bootstrap step, outside the loss) and
    the same rows of every other input, the loss equals the loss of zero rewards; moving those rewards to
    the last rows of a time-major layout (rows (T - 1) * E + e) changes it."""
    rng = np.random.default_rng(5)
    obs, actions, behaviour, _, _ = _batch(rng)
    dones = np.zeros(B, bool)

    def loss(rewards):
        M.ops.seed(0)
        return float(_impala(M).learn(obs, actions, behaviour, rewards, dones, 1e-3, 0.0)[0].total_loss)

    env_major_last = np.zeros(B, np.float32)
    env_major_last[np.arange(E) * T + T - 1] = 10.0
    time_major_last = np.zeros(B, np.float32)
    time_major_last[(T - 1) * E + np.arange(E)] = 10.0
    assert loss(env_major_last) == pytest.approx(loss(np.zeros(B, np.float32)), rel=1e-6)
    assert abs(loss(time_major_last) - loss(np.zeros(B, np.float32))) > 1.0


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
def test_bad_learn_input_is_named(index, value, match, M):
    batch = _replace(_batch(np.random.default_rng(0)), index, value)
    with pytest.raises(ValueError, match=match):
        _impala(M).learn(*batch, 1e-3, -0.01)


def test_batch_not_a_multiple_of_the_unroll_length(M):
    obs, actions, behaviour, rewards, dones = _batch(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"B=14 must be a whole number of unrolls of sample_batch_steps=5"):
        _impala(M).learn(obs[:-1], actions[:-1], behaviour[:-1], rewards[:-1], dones[:-1], 1e-3, -0.01)


def test_continuous_policy_is_refused(M):
    alg = M.algs.IMPALA(M.GaussianACModel(), sample_batch_steps=T)
    with pytest.raises(ValueError, match="IMPALA supports Discrete action spaces only"):
        alg.sample(np.zeros((4, OBS_DIM), np.float32))


def _no_value(M):
    class NoValue(M.ops.Model):
        def __init__(self):
            super().__init__()
            self.pi = M.ops.nn.Linear(OBS_DIM, NUM_ACTIONS)

        def policy(self, obs):
            return self.pi(obs)

    return NoValue()


@pytest.mark.parametrize("kwargs, match", [
    (dict(model=_no_value, sample_batch_steps=T), "value"),
    (dict(model=None), "IMPALA needs sample_batch_steps"),
    (dict(model=None, sample_batch_steps=1), "IMPALA needs sample_batch_steps"),
    (dict(model=None, sample_batch_steps=T, gamma=1.5), "gamma in"),
    (dict(model=None, sample_batch_steps=T, clip_rho_threshold=0.0), "clip_rho_threshold > 0"),
    (dict(model=None, sample_batch_steps=T, vf_loss_coeff=-1.0), r"vf_loss_coeff >= 0.*vf_loss_coeff=0.5"),
    (dict(model=None, sample_batch_steps=T, learning_rate=0.0), r"learning_rate > 0"),
])
def test_bad_construction_is_named(kwargs, match, M):
    kwargs = dict(kwargs)
    build = kwargs.pop("model")
    with pytest.raises(ValueError, match=match):
        M.algs.IMPALA(M.DiscreteACModel() if build is None else build(M), **kwargs)
