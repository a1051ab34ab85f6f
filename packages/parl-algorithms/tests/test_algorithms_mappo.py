"""MAPPO and PopArt (parl_algorithms.{torch,paddle}.mappo) on both backends: the losses and PopArt's statistics
against hand-computed cases, the policy loss and entropy of Discrete / MultiDiscrete / Box policies through
``learn``, learning on a fixed batch, save / restore, bad input, the framework-free batch layout
(``parl_algorithms.algorithms.mappo``), and the same update on torch and paddle."""

import math

import numpy as np
import pytest
from algo_models import models

from parl_algorithms.algorithms import mappo as _mappo

LN2, LN3, LN2PI = math.log(2.0), math.log(3.0), math.log(2.0 * math.pi)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One intra-op thread, as the examples run (the machine is shared; small matmuls lose to contention)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


H_DISCRETE = -(1 / 6 * math.log(1 / 6) + 1 / 3 * math.log(1 / 3) + 1 / 2 * math.log(1 / 2))  # probs (1, 2, 3) / 6


def build_model(M, kind="discrete", sizes=(3,), obs_dim=4, cent_dim=6, hidden=8):
    """A MAPPO model of PARL's contract on M's backend: ``actor`` (``multi_discrete``, ``continuous_action``),
    ``critic.v_out``, ``policy``, ``value``, ``act_dim``. The heads are one Linear split per component."""
    B = M.ops

    class Actor(B.Model):
        def __init__(self):
            super().__init__()
            self.multi_discrete = kind == "multi_discrete"
            self.continuous_action = kind == "continuous"
            self.fc = B.nn.Linear(obs_dim, hidden)
            self.out = B.nn.Linear(hidden, sum(sizes))
            if self.continuous_action:
                self.log_std = B.zeros_param(self, sizes[0])

        def forward(self, obs):
            out = self.out(B.tanh(self.fc(obs)))
            if self.multi_discrete:
                bounds = np.cumsum((0,) + tuple(sizes))
                return [out[:, int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
            if self.continuous_action:
                return out, self.log_std.exp()
            return out

    class Critic(B.Model):
        def __init__(self):
            super().__init__()
            self.fc = B.nn.Linear(cent_dim, hidden)
            self.v_out = B.nn.Linear(hidden, 1)

        def forward(self, cent_obs):
            return self.v_out(B.tanh(self.fc(cent_obs)))

    class MAPPOModel(B.Model):
        def __init__(self):
            super().__init__()
            self.act_dim = list(sizes) if kind == "multi_discrete" else sizes[0]
            self.actor = Actor()
            self.critic = Critic()

        def policy(self, obs):
            return self.actor(obs)

        def value(self, cent_obs):
            return self.critic(cent_obs)

    return MAPPOModel()


def build(M, kind="discrete", sizes=(3,), **kwargs):
    args = dict(clip_param=0.2, value_loss_coef=1.0, entropy_coef=0.01, initial_lr=7e-4, huber_delta=10.0,
                eps=1e-5, max_grad_norm=10.0)
    args.update(kwargs)
    return M.algs.MAPPO(build_model(M, kind, sizes), device="cpu", **args)


def set_params(model, **arrays):
    """Overwrite named parameters (numpy) of a model, keeping the others."""
    weights = model.get_weights()
    for name, value in arrays.items():
        if name not in weights:
            raise KeyError(f"{name} not in {sorted(weights)}")
        weights[name] = np.asarray(value, dtype=np.float32).reshape(weights[name].shape)
    model.set_weights(weights)


def fixed_policy(M, alg, logits=None, mean=None, log_std=None):
    """Make the actor obs-independent: zero weights, the output bias = ``logits`` (or the Gaussian ``mean``)."""
    w = alg.model.actor.get_weights()
    zeros = {k: np.zeros_like(v) for k, v in w.items() if k.endswith("weight")}
    out_bias = logits if logits is not None else mean
    extra = {} if log_std is None else {"log_std": log_std}
    set_params(alg.model.actor, **zeros, **{"out.bias": out_bias}, **extra)


def np_(M, t):
    return np.asarray(M.ops.numpy(t))


def f32(x):
    return np.asarray(x, dtype=np.float32)


# -- the pure losses ------------------------------------------------------------------------------------------------


def marl_functional(M):
    import importlib

    return importlib.import_module(f"parl_algorithms.{M.ops.name}.marl_functional")


def to_t(M, x):
    if M.ops.name == "torch":
        import torch

        return torch.as_tensor(f32(x))
    import paddle

    return paddle.to_tensor(f32(x))


VALUES, VALUE_PREDS, RETURNS = [1.0, 0.0, 4.0, 0.9], [0.5, 0.0, 0.0, 0.0], [0.0, -3.0, 1.0, 1.0]
# clip 0.2, delta 1: V_clip = [0.7, 0, 0.2, 0.2]; errors (orig, clipped) = (-1, -0.7), (-3, -3), (-3, 0.8), (0.1, 0.8)
# huber: (0.5, 0.245) -> 0.5; (2.5, 2.5) -> 2.5; (2.5, 0.32) -> 2.5; (0.005, 0.32) -> 0.32
PER_ROW = [0.5, 2.5, 2.5, 0.32]


def test_clipped_huber_value_loss_hand_computed(M):
    F = marl_functional(M)
    col = lambda x: to_t(M, np.reshape(x, (-1, 1)))  # noqa: E731
    loss = F.mappo_value_loss(col(VALUES), col(VALUE_PREDS), col(RETURNS), 0.2, 1.0)
    assert float(loss) == pytest.approx(np.mean(PER_ROW), rel=1e-6)
    masks = col([1.0, 1.0, 0.0, 1.0])  # row 2 inactive: (0.5 + 2.5 + 0.32) / 3
    assert float(F.mappo_value_loss(col(VALUES), col(VALUE_PREDS), col(RETURNS), 0.2, 1.0, masks)) == pytest.approx(
        (0.5 + 2.5 + 0.32) / 3, rel=1e-6)
    # squared error instead of Huber: rows (0.5, 0.245), (4.5, 4.5), (4.5, 0.32), (0.005, 0.32)
    assert float(F.mappo_value_loss(col(VALUES), col(VALUE_PREDS), col(RETURNS), 0.2, None)) == pytest.approx(
        (0.5 + 4.5 + 4.5 + 0.32) / 4, rel=1e-6)
    # the Huber loss is symmetric (PARL's gives 0 below -delta): huber(-3, 1) = huber(3, 1) = 2.5
    assert np_(M, F.huber_loss(to_t(M, [-3.0, 3.0, 0.5]), 1.0)).tolist() == pytest.approx([2.5, 2.5, 0.125])


def test_policy_loss_hand_computed(M):
    F = marl_functional(M)
    # two rows of a 2-component MultiDiscrete: ratios (1.5, 0.9) with A = 2, (0.5, 1.0) with A = -1, clip 0.2
    # row 0: min(3, 2.4) + min(1.8, 1.8) = 4.2; row 1: min(-0.5, -0.8) + min(-1, -1) = -1.8
    log_probs = to_t(M, np.log([[1.5, 0.9], [0.5, 1.0]]))
    old = to_t(M, np.zeros((2, 2)))
    adv = to_t(M, [[2.0], [-1.0]])
    assert float(F.mappo_policy_loss(log_probs, old, adv, 0.2)) == pytest.approx(-(4.2 - 1.8) / 2, rel=1e-6)
    assert float(F.mappo_policy_loss(log_probs, old, adv, 0.2, to_t(M, [[1.0], [0.0]]))) == pytest.approx(-4.2)
    with pytest.raises(ValueError, match=r"log_probs and old_log_probs must both be \[B, k\]"):
        F.mappo_policy_loss(log_probs, to_t(M, np.zeros((2, 1))), adv, 0.2)


# -- PopArt ---------------------------------------------------------------------------------------------------------


def test_popart_statistics_and_preserved_outputs_hand_computed(M):
    B = M.ops
    layer = B.nn.Linear(2, 1)
    popart = M.algs.PopArt(layer.weight, layer.bias, beta=0.5)
    w = np.array([[1.0], [2.0]], np.float32) if B.name == "paddle" else np.array([[1.0, 2.0]], np.float32)
    layer.weight.set_value(w) if B.name == "paddle" else layer.weight.data.copy_(to_t(M, w))
    layer.bias.set_value(f32([0.5])) if B.name == "paddle" else layer.bias.data.copy_(to_t(M, [0.5]))
    h = to_t(M, [[1.0, 1.0], [0.0, -2.0]])
    before = popart.denormalize(layer(h))  # zero statistics: mu = 0, sigma^2 = max(0, 0.01) -> sigma 0.1
    assert before.ravel().tolist() == pytest.approx([0.35, -0.35], rel=1e-6)  # 0.1 * [3.5, -3.5]

    popart.update(f32([[2.0], [4.0]]))  # batch mean 3, mean square 10
    assert np_(M, popart.mean).tolist() == pytest.approx([1.5])  # 0.5 * 0 + 0.5 * 3
    assert np_(M, popart.mean_sq).tolist() == pytest.approx([5.0])  # 0.5 * 0 + 0.5 * 10
    assert float(popart.debiasing_term) == pytest.approx(0.5)
    mu, var = popart.debiased_mean_var()
    assert (np_(M, mu).tolist(), np_(M, var).tolist()) == (pytest.approx([3.0]), pytest.approx([1.0]))  # 10 - 9
    # W' = W * 0.1 / 1, b' = (0.1 * 0.5 + 0 - 3) / 1
    assert np_(M, layer.weight).ravel().tolist() == pytest.approx([0.1, 0.2], rel=1e-6)
    assert np_(M, layer.bias).tolist() == pytest.approx([-2.95], rel=1e-6)
    after = popart.denormalize(layer(h))
    np.testing.assert_allclose(after, before, rtol=1e-5)  # unnormalised predictions preserved

    popart.update(f32([[0.0], [0.0]]))  # mean 0.75, mean_sq 2.5, d 0.75: mu 1, sigma^2 = 10/3 - 1
    sigma = math.sqrt(10 / 3 - 1)
    assert float(popart.debiasing_term) == pytest.approx(0.75)
    assert np_(M, popart.stddev).tolist() == pytest.approx([sigma], rel=1e-6)
    assert np_(M, popart.normalize(f32([[4.0]]))).ravel().tolist() == pytest.approx([3.0 / sigma], rel=1e-6)
    assert popart.denormalize(f32([[-1.0]])).ravel().tolist() == pytest.approx([1.0 - sigma], rel=1e-6)
    np.testing.assert_allclose(popart.denormalize(layer(h)), before, rtol=1e-5)


def test_popart_default_beta_debiases_the_first_batch(M):
    # PARL's beta 0.99999: the raw moments are ~1e-5 of the batch's, the debiased ones are the batch's
    B = M.ops
    layer = B.nn.Linear(3, 1)
    popart = M.algs.PopArt(layer.weight, layer.bias)
    popart.update(f32([[2.0], [4.0], [9.0]]))  # mean 5, mean square (4 + 16 + 81) / 3
    assert np_(M, popart.mean).tolist() == pytest.approx([5.0 * 1e-5], rel=1e-3)
    mu, var = popart.debiased_mean_var()
    assert np_(M, mu).tolist() == pytest.approx([5.0], rel=1e-3)
    assert np_(M, var).tolist() == pytest.approx([101 / 3 - 25], rel=1e-3)
    popart.reset_parameters()
    assert float(popart.debiasing_term) == 0.0 and np_(M, popart.mean).tolist() == [0.0]


# -- policy loss and entropy through learn, per action kind ---------------------------------------------------------


def learn_once(M, alg, actions, old_log_probs, adv, masks=None, batch=None):
    n = len(adv)
    rng = np.random.default_rng(0)
    out = alg.learn(rng.normal(size=(n, 6)).astype(np.float32), rng.normal(size=(n, 4)).astype(np.float32),
                    actions, np.zeros((n, 1), np.float32), np.ones((n, 1), np.float32), f32(old_log_probs),
                    f32(adv), masks)
    return [float(np_(M, x)) for x in out]


def test_discrete_policy_loss_and_entropy(M):
    log_p = np.log([1 / 6, 1 / 3, 1 / 2])
    actions = np.array([[0], [2]], np.int64)
    # ratios 1.5 and 0.5, A = 1: min(1.5, 1.2) = 1.2, min(0.5, 0.8) = 0.5
    old = [[log_p[0] - math.log(1.5)], [log_p[2] - math.log(0.5)]]
    _, policy_loss, entropy = learn_once(M, build_and_fix(M), actions, old, [[1.0], [1.0]])
    assert policy_loss == pytest.approx(-(1.2 + 0.5) / 2, rel=1e-5)
    assert entropy == pytest.approx(H_DISCRETE, rel=1e-5)
    _, policy_loss, _ = learn_once(M, build_and_fix(M), actions, old, [[1.0], [1.0]], f32([[1.0], [0.0]]))
    assert policy_loss == pytest.approx(-1.2, rel=1e-5)


def build_and_fix(M):
    alg = build(M)
    fixed_policy(M, alg, logits=[0.0, LN2, LN3])  # probs (1, 2, 3) / 6
    return alg


def test_multi_discrete_policy_loss_and_entropy(M):
    alg = build(M, "multi_discrete", (2, 3))
    fixed_policy(M, alg, logits=[0.0, 0.0, 0.0, LN2, LN3])  # (1/2, 1/2) and (1/6, 1/3, 1/2)
    values, actions, log_probs = alg.sample(f32(np.zeros((1, 6))), f32(np.zeros((1, 4))))
    assert tuple(actions.shape) == (1, 2) and tuple(log_probs.shape) == (1, 2) and tuple(values.shape) == (1, 1)
    old = [[math.log(0.5) - math.log(1.5), math.log(0.5) - math.log(0.9)]]
    # ratios (1.5, 0.9) with A = 2: -(min(3, 2.4) + min(1.8, 1.8)); entropy: the mean of the components'
    _, policy_loss, entropy = learn_once(M, alg, np.array([[1, 2]]), old, [[2.0]])
    assert policy_loss == pytest.approx(-4.2, rel=1e-5)
    assert entropy == pytest.approx((LN2 + H_DISCRETE) / 2, rel=1e-5)


def test_box_policy_loss_and_entropy(M):
    alg = build(M, "continuous", (2,))
    fixed_policy(M, alg, mean=[0.5, -1.0], log_std=[0.0, LN2])
    action = f32([[1.5, 1.0]])  # z = (1, 1)
    log_prob = -1.0 - LN2 - LN2PI  # sum(-z^2 / 2 - log_std - log(2 pi) / 2)
    _, det_actions, det_log_probs = alg.sample(f32(np.zeros((1, 6))), f32(np.zeros((1, 4))), deterministic=True)
    assert np_(M, det_actions).ravel().tolist() == pytest.approx([0.5, -1.0])
    assert np_(M, det_log_probs).ravel().tolist() == pytest.approx([-LN2 - LN2PI], rel=1e-5)  # at the mean, z = 0
    # ratio 1.1 (inside the clip), A = -1: -min(-1.1, -1.1)
    _, policy_loss, entropy = learn_once(M, alg, action, [[log_prob - math.log(1.1)]], [[-1.0]])
    assert policy_loss == pytest.approx(1.1, rel=1e-5)
    assert entropy == pytest.approx(1.0 + LN2PI + LN2, rel=1e-5)  # sum(0.5 + log(2 pi) / 2 + log_std)


def test_sample_shapes_masks_and_determinism(M):
    alg = build_and_fix(M)
    cent, obs = f32(np.zeros((4, 6))), f32(np.zeros((4, 4)))
    values, actions, log_probs = alg.sample(cent, obs, deterministic=True)
    assert np_(M, actions).tolist() == [[2]] * 4
    assert np_(M, log_probs).ravel().tolist() == pytest.approx([math.log(0.5)] * 4)
    assert tuple(values.shape) == (4, 1)
    np.testing.assert_allclose(np_(M, values), np_(M, alg.value(cent)), rtol=1e-6)
    avail = np.array([[True, True, False]] * 4)
    _, actions, log_probs = alg.sample(cent, obs, deterministic=True, available_actions=avail)
    # the best available action is 1, with probability 2/3 among the available ones
    assert np_(M, actions).tolist() == [[1]] * 4
    assert np_(M, log_probs).ravel().tolist() == pytest.approx([math.log(2 / 3)] * 4, rel=1e-5)
    M.ops.seed(0)
    _, drawn, _ = alg.sample(f32(np.zeros((3000, 6))), f32(np.zeros((3000, 4))), available_actions=np.repeat(
        avail[:1], 3000, 0))
    counts = np.bincount(np_(M, drawn).ravel(), minlength=3) / 3000
    assert counts[2] == 0 and counts[1] == pytest.approx(2 / 3, abs=0.04)


# -- learning, checkpoints --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_popart", [True, False])
def test_learn_improves_on_a_fixed_batch(M, use_popart):
    M.ops.seed(1)
    alg = build(M, use_popart=use_popart, initial_lr=1e-2)
    rng = np.random.default_rng(1)
    n = 64
    cent, obs = rng.normal(size=(n, 6)).astype(np.float32), rng.normal(size=(n, 4)).astype(np.float32)
    returns = (2.0 * cent[:, :1] + 1.0).astype(np.float32)  # a learnable target away from the initial values
    _, actions, _ = (np_(M, x) for x in alg.sample(cent, obs))
    adv = np.where(actions == 0, 1.0, -1.0).astype(np.float32)  # favour action 0

    def mean_prob_action0():
        logits = np_(M, alg.model.policy(to_t(M, obs)))
        p = np.exp(logits - logits.max(1, keepdims=True))
        return float((p / p.sum(1, keepdims=True))[:, 0].mean())

    def value_error():
        v = np_(M, alg.value(cent))
        v = alg.value_normalizer.denormalize(v) if use_popart else v
        return float(np.mean((v - returns) ** 2))

    p0, err0 = mean_prob_action0(), value_error()
    losses = []
    for _ in range(20):  # 20 rounds of 5 epochs; the clip bounds each round's move (values by 0.2, ratios by 20 %)
        values, _, _ = (np_(M, x) for x in alg.sample(cent, obs))
        log_probs = np_(M, alg._log_probs_entropy(alg._policy(to_t(M, obs), None), to_t(M, actions))[0])
        losses += [float(np_(M, alg.learn(cent, obs, actions, values, returns, log_probs, adv)[0]))
                   for _ in range(5)]
    assert mean_prob_action0() > p0 + 0.05
    assert value_error() < 0.5 * err0
    assert losses[-1] < losses[0]
    assert set(alg.last_info) == {"train/value_loss", "train/policy_loss", "train/entropy", "train/approx_kl",
                                  "train/clip_fraction", "train/actor_grad_norm", "train/critic_grad_norm"}
    assert alg.last_info["train/approx_kl"] > 0 and 0 < alg.last_info["train/clip_fraction"] <= 1


def test_save_restore_round_trip(M, tmp_path):
    alg = build(M)
    rng = np.random.default_rng(2)
    cent, obs = rng.normal(size=(8, 6)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float32)
    values, actions, log_probs = (np_(M, x) for x in alg.sample(cent, obs))
    for _ in range(3):
        alg.learn(cent, obs, actions, values, rng.normal(size=(8, 1)).astype(np.float32) * 10, log_probs,
                  rng.normal(size=(8, 1)).astype(np.float32))
    M.Agent(alg).save(str(tmp_path / "mappo.ckpt"))
    fresh = build(M)
    M.Agent(fresh).restore(str(tmp_path / "mappo.ckpt"))
    for name in ("mean", "mean_sq", "debiasing_term"):
        np.testing.assert_array_equal(np_(M, getattr(fresh.value_normalizer, name)),
                                      np_(M, getattr(alg.value_normalizer, name)))
    assert float(np_(M, fresh.value_normalizer.debiasing_term)) == pytest.approx(1 - 0.99999 ** 3, rel=1e-4)
    np.testing.assert_array_equal(np_(M, fresh.value(cent)), np_(M, alg.value(cent)))
    np.testing.assert_array_equal(np_(M, fresh.sample(cent, obs, True)[2]), np_(M, alg.sample(cent, obs, True)[2]))
    # the optimizers resume too: one more identical step keeps the two equal
    batch = (cent, obs, actions, values, np.ones((8, 1), np.float32), log_probs, np.ones((8, 1), np.float32))
    a, b = alg.learn(*batch), fresh.learn(*batch)
    assert [float(np_(M, x)) for x in a] == pytest.approx([float(np_(M, x)) for x in b], rel=1e-6)
    no_popart = build(M, use_popart=False)
    with pytest.raises(ValueError, match="saved with PopArt statistics"):
        M.Agent(no_popart).restore(str(tmp_path / "mappo.ckpt"))


# -- bad input ------------------------------------------------------------------------------------------------------


def test_bad_batches_name_the_argument_and_the_fix(M):
    alg = build(M)
    rng = np.random.default_rng(3)
    cent, obs = rng.normal(size=(8, 6)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float32)
    ok = dict(actions=np.zeros((8, 1), np.int64), value_preds=np.zeros((8, 1), np.float32),
              returns=np.zeros((8, 1), np.float32), old_log_probs=np.zeros((8, 1), np.float32),
              adv_targ=np.zeros((8, 1), np.float32))

    def learn(**changes):
        args = dict(ok, **changes)
        return alg.learn(changes.pop("share_obs", cent), changes.pop("obs", obs), args["actions"], args["value_preds"],
                         args["returns"], args["old_log_probs"], args["adv_targ"], args.get("active_masks"))

    with pytest.raises(ValueError, match=r"returns must be \[B=8, 1\]"):
        learn(returns=np.zeros((7, 1), np.float32))
    with pytest.raises(ValueError, match=r"old_log_probs must be \[B=8, 1\]"):
        learn(old_log_probs=np.zeros((8, 2), np.float32))
    with pytest.raises(ValueError, match=r"cent_obs has 24 rows but obs has 8.*np.repeat"):
        learn(share_obs=np.zeros((24, 6), np.float32))
    with pytest.raises(ValueError, match=r"\[B, obs_dim\].*reshape"):
        learn(obs=np.zeros((2, 4, 4), np.float32))  # [E, n_agents, obs_dim] not flattened
    with pytest.raises(ValueError, match=r"action indices must lie in \[0, n\).*\[3\]"):
        learn(actions=np.full((8, 1), 3))
    with pytest.raises(ValueError, match="integer indices"):
        learn(actions=np.full((8, 1), 0.5, np.float32))
    with pytest.raises(ValueError, match=r"active_masks must be \[B=8, 1\]"):
        learn(active_masks=np.ones((4, 1), np.float32))
    with pytest.raises(ValueError, match="the model rejected inputs"):
        alg.sample(np.zeros((2, 5), np.float32), np.zeros((2, 4), np.float32))  # wrong cent_obs_dim
    with pytest.raises(ValueError, match=r"available_actions must be bool \[B, n_actions\] = \(2, 3\)"):
        alg.sample(np.zeros((2, 6), np.float32), np.zeros((2, 4), np.float32), available_actions=np.ones((2, 5), bool))


def test_bad_models_and_hyperparameters(M):
    B = M.ops
    model = build_model(M)
    with pytest.raises(ValueError, match="huber_delta > 0"):
        M.algs.MAPPO(model, 0.2, 1.0, 0.01, 7e-4, 0.0)
    with pytest.raises(ValueError, match="initial_lr > 0"):
        M.algs.MAPPO(model, 0.2, 1.0, 0.01, None, 10.0)
    with pytest.raises(ValueError, match="entropy_coef >= 0"):
        M.algs.MAPPO(model, 0.2, 1.0, -0.01, 7e-4, 10.0)

    class NoCritic(B.Model):
        def __init__(self):
            super().__init__()
            self.actor = B.nn.Linear(4, 3)

        def policy(self, obs):
            return self.actor(obs)

        def value(self, cent_obs):
            return cent_obs

    with pytest.raises(ValueError, match=r"needs model.critic"):
        M.algs.MAPPO(NoCritic(), 0.2, 1.0, 0.01, 7e-4, 10.0, device="cpu")
    model = build_model(M)
    del model.critic.v_out
    model.critic.head = B.nn.Linear(8, 1)
    with pytest.raises(ValueError, match="needs model.critic.v_out.*use_popart=False"):
        M.algs.MAPPO(model, 0.2, 1.0, 0.01, 7e-4, 10.0, device="cpu")
    model = build_model(M, "multi_discrete", (2, 3))
    model.act_dim = 5
    with pytest.raises(ValueError, match=r"model.act_dim must be the list of the component sizes"):
        M.algs.MAPPO(model, 0.2, 1.0, 0.01, 7e-4, 10.0, device="cpu")
    other = models("paddle" if B.name == "torch" else "torch")
    with pytest.raises(TypeError, match="model"):
        M.algs.MAPPO(build_model(other), 0.2, 1.0, 0.01, 7e-4, 10.0)


def test_action_layout_of_gymnasium_spaces():
    from gymnasium import spaces

    assert _mappo.action_layout(spaces.Discrete(5)) == _mappo.ActionLayout("discrete", [5])
    layout = _mappo.action_layout(spaces.MultiDiscrete([5, 10]))
    assert (layout.kind, layout.sizes, layout.width, layout.log_prob_width) == ("multi_discrete", [5, 10], 2, 2)
    layout = _mappo.action_layout(spaces.Box(0.0, 1.0, (5,)))
    assert (layout.kind, layout.width, layout.log_prob_width) == ("continuous", 5, 1)
    for space in (spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3))), spaces.MultiBinary(3),
                  spaces.Box(0.0, 1.0, (2, 2)), spaces.Discrete(3, start=1)):
        with pytest.raises(ValueError, match="MAPPO"):
            _mappo.action_layout(space)
    with pytest.raises(ValueError, match="Discrete, MultiDiscrete .* and 1-D Box"):
        _mappo.action_layout(spaces.Tuple((spaces.Discrete(2),)))


# -- the framework-free batch layout --------------------------------------------------------------------------------


def test_agent_counts_and_unroll_layout():
    assert _mappo.check_n_agents(3, models=3, batch=3, agent_ids=None) == 3
    with pytest.raises(ValueError, match="the env has 3 agents but the models count 2; build one model per agent"):
        _mappo.check_n_agents(3, models=2)
    with pytest.raises(ValueError, match="batch count 2; lay the batch out as \\[T, E, n_agents"):
        _mappo.check_n_agents(3, batch=2)
    T, E, n = 4, 2, 3
    unroll = dict(obs=np.zeros((T, E, n, 5)), actions=np.zeros((T, E, n)), log_probs=np.zeros((T, E, n)),
                  values=np.zeros((T + 1, E, n)), rewards=np.zeros((T, E, n)),
                  terminated=np.zeros((T, E), bool), truncated=np.zeros((T, E), bool))
    assert _mappo.check_unroll(unroll, 3) == (4, 2)
    with pytest.raises(ValueError, match="the env has 2 agents but the batch count 3"):
        _mappo.check_unroll(unroll, 2)
    with pytest.raises(ValueError, match=r"terminated must be bool \[T=4, E=2\]"):
        _mappo.check_unroll(dict(unroll, terminated=np.zeros((T, E, n), bool)), 3)
    with pytest.raises(ValueError, match=r"lacks \['rewards'\]"):
        _mappo.check_unroll({k: v for k, v in unroll.items() if k != "rewards"}, 3)
    with pytest.raises(ValueError, match=r"values must be \[T \+ 1, E, n_agents\]"):
        _mappo.check_unroll(dict(unroll, values=np.zeros((T, E, n))), 3)
    x = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    ids = _mappo.with_agent_ids(x)
    assert ids.shape == (2, 3, 5) and ids[1, 2].tolist() == [10.0, 11.0, 0.0, 0.0, 1.0]
    cent = _mappo.central_obs(np.array([[1.0, 2.0], [3.0, 4.0]]), 3)
    assert cent.shape == (2, 3, 2) and cent[1, 2].tolist() == [3.0, 4.0]


def test_mappo_gae_bootstraps_truncation_but_not_termination():
    # one env, 2 agents, T = 3; gamma 0.5, lambda 1
    rewards = np.array([[[1.0, 2.0]], [[0.0, 0.0]], [[4.0, 4.0]]], np.float32)
    values = np.zeros((3, 1, 2), np.float32)
    next_values = np.full((3, 1, 2), 10.0, np.float32)
    terminated = np.array([[False], [False], [True]])
    truncated = np.array([[False], [True], [False]])
    adv, returns = _mappo.mappo_gae(rewards, values, next_values, terminated, truncated, 0.5, 1.0)
    # t=2 terminated: A = 4 (no bootstrap); t=1 truncated: A = 0 + 0.5 * 10 = 5 (bootstraps, no carry from t=2);
    # t=0: delta = r + 0.5 * 10, A = delta + 0.5 * 1 * A_1
    assert adv[:, 0, 0].tolist() == pytest.approx([1.0 + 5.0 + 2.5, 5.0, 4.0])
    assert adv[:, 0, 1].tolist() == pytest.approx([2.0 + 5.0 + 2.5, 5.0, 4.0])
    np.testing.assert_array_equal(returns, adv)
    with pytest.raises(ValueError, match=r"terminated must be bool \[T, E\]"):
        _mappo.mappo_gae(rewards, values, next_values, terminated[:, :, None], truncated, 0.5, 1.0)


def test_masked_advantage_normalisation_as_parl():
    adv = np.array([[1.0], [3.0], [100.0]], np.float32)
    masks = np.array([[1.0], [1.0], [0.0]], np.float32)
    out = _mappo.normalize_advantages(adv, masks)  # mean 2, population std 1 over the active rows
    assert out.ravel().tolist() == pytest.approx([-1 / (1 + 1e-5), 1 / (1 + 1e-5), 98 / (1 + 1e-5)], rel=1e-6)
    parts = _mappo.minibatches(10, 3, np.random.default_rng(0))
    assert [len(p) for p in parts] == [3, 3, 3] and len(set(np.concatenate(parts).tolist())) == 9
    with pytest.raises(ValueError, match="num_mini_batch"):
        _mappo.minibatches(4, 5, np.random.default_rng(0))


# -- same update on torch and paddle --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, sizes", [("discrete", (3,)), ("multi_discrete", (2, 3)), ("continuous", (2,))])
def test_torch_and_paddle_same_update(kind, sizes):
    pytest.importorskip("paddle")
    from test_algorithms_equivalence import copy_torch_weights

    T, P = models("torch"), models("paddle")
    T.ops.seed(0)
    talg = build(T, kind, sizes, max_grad_norm=0.5)
    palg = build(P, kind, sizes, max_grad_norm=0.5)
    copy_torch_weights(talg.model, palg.model)
    rng = np.random.default_rng(4)
    n = 16
    if kind == "continuous":
        actions = rng.normal(size=(n, 2)).astype(np.float32)
        width = 1
    else:
        actions = np.stack([rng.integers(0, s, size=n) for s in sizes], 1)
        width = len(sizes) if kind == "multi_discrete" else 1
    masks = (rng.random((n, 1)) > 0.2).astype(np.float32)
    for step in range(3):
        batch = (rng.normal(size=(n, 6)).astype(np.float32), rng.normal(size=(n, 4)).astype(np.float32), actions,
                 rng.normal(size=(n, 1)).astype(np.float32), (rng.normal(size=(n, 1)) * 5 + 2).astype(np.float32),
                 (rng.normal(size=(n, width)) - 1.5).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32),
                 masks)
        tout = [float(np_(T, x)) for x in talg.learn(*batch)]
        pout = [float(np_(P, x)) for x in palg.learn(*batch)]
        assert tout == pytest.approx(pout, rel=1e-4, abs=1e-5), step
    tw, pw = talg.model.get_weights(), palg.model.get_weights()
    for name, value in tw.items():
        other = pw[name].T if value.ndim == 2 and name.endswith("weight") else pw[name]
        np.testing.assert_allclose(value, other, rtol=1e-4, atol=1e-5, err_msg=name)
    for name in ("mean", "mean_sq", "debiasing_term"):
        np.testing.assert_allclose(np_(T, getattr(talg.value_normalizer, name)),
                                   np_(P, getattr(palg.value_normalizer, name)), rtol=1e-5)
