"""MADDPG (Lowe et al. 2017) on both backends: its pure functions on hand-computed cases, the algorithm's samples,
learning, target sync, checkpoints, every bad input's message, and the same update on torch and paddle."""

import functools
import importlib
import math

import numpy as np
import pytest
from algo_models import models
from gymnasium import spaces

from parl_algorithms.algorithms import maddpg as _maddpg

OBS_DIMS = (3, 4)  # two agents with different observation sizes
DISCRETE = [spaces.Discrete(3), spaces.Discrete(2)]
BOX = [spaces.Box(-1.0, 1.0, (2,), np.float32), spaces.Box(0.0, 1.0, (3,), np.float32)]
HP = dict(gamma=0.95, tau=0.01, actor_lr=1e-2, critic_lr=1e-2)
B = 8


def F(M):  # noqa: N802 (the backend's marl_functional module)
    return importlib.import_module(f"parl_algorithms.{M.ops.name}.marl_functional")


def tensor(M, x):
    x = np.asarray(x, dtype=np.float32)
    if M.ops.name == "torch":
        import torch

        return torch.as_tensor(x)
    import paddle

    return paddle.to_tensor(x)


@functools.cache
def ma_model_cls(backend):
    """PARL's MADDPG model contract: ``policy(obs)`` -> logits or (mean, log_std); ``value(obs_n, act_n)`` -> [B, 1]."""
    ops = models(backend).ops

    def mlp(inp, out, hidden=16):
        return ops.nn.Sequential(ops.nn.Linear(inp, hidden), ops.Tanh(), ops.nn.Linear(hidden, out))

    class MAModel(ops.Model):
        def __init__(self, obs_dim, act_dim, critic_in_dim, continuous=False):
            super().__init__()
            self.continuous = continuous
            self.actor = mlp(obs_dim, act_dim)
            if continuous:
                self.log_std = ops.nn.Linear(obs_dim, act_dim)
            self.critic = mlp(critic_in_dim, 1)

        def policy(self, obs):
            return (self.actor(obs), self.log_std(obs)) if self.continuous else self.actor(obs)

        def value(self, obs_n, act_n):
            return self.critic(ops.cat(list(obs_n) + list(act_n)))

        def get_actor_params(self):
            return list(self.actor.parameters()) + (list(self.log_std.parameters()) if self.continuous else [])

        def get_critic_params(self):
            return self.critic.parameters()

    return MAModel


def act_dims(act_space):
    return [s.n if isinstance(s, spaces.Discrete) else s.shape[0] for s in act_space]


def build(M, act_space=DISCRETE, index=0, continuous=None, **kw):
    continuous = isinstance(act_space[index], spaces.Box) if continuous is None else continuous
    dims = act_dims(act_space)
    model = ma_model_cls(M.ops.name)(OBS_DIMS[index], dims[index], sum(OBS_DIMS) + sum(dims), continuous)
    return M.algs.MADDPG(model, agent_index=index, act_space=act_space, **{**HP, **kw})


def joint_batch(rng, act_space=DISCRETE, batch=B):
    obs_n = [rng.normal(size=(batch, d)).astype(np.float32) for d in OBS_DIMS]
    act_n = []
    for s in act_space:
        if isinstance(s, spaces.Discrete):
            act_n.append(np.eye(s.n, dtype=np.float32)[rng.integers(0, s.n, batch)])
        else:
            act_n.append(rng.uniform(-1, 1, (batch, s.shape[0])).astype(np.float32))
    return obs_n, act_n, rng.normal(size=batch).astype(np.float32)


# -- pure functions, hand-computed ----------------------------------------------------------------------


def test_target_q_hand_computed(M):
    # y = r + gamma (1 - terminated) Q': 1 + 0.9 * 10 = 10; 2 (terminated); -1 + 0.9 * 3 = 1.7
    y = F(M).maddpg_target_q(tensor(M, [1, 2, -1]), tensor(M, [10, -4, 3]), tensor(M, [0, 1, 0]), 0.9)
    np.testing.assert_allclose(M.ops.numpy(y), [10.0, 2.0, 1.7], rtol=1e-6)
    # the framework-free arithmetic gives the same on numpy
    np.testing.assert_allclose(_maddpg.critic_target(np.array([1.0]), np.array([10.0]), np.array([0.0]), 0.9), [10.0])
    with pytest.raises(ValueError, match=r"must all be \[B\]"):
        F(M).maddpg_target_q(tensor(M, [1, 2]), tensor(M, [[1], [2]]), tensor(M, [0, 0]), 0.9)
    with pytest.raises(ValueError, match="gamma must be in"):
        F(M).maddpg_target_q(tensor(M, [1]), tensor(M, [1]), tensor(M, [0]), 1.5)


def test_actor_loss_hand_computed(M):
    # -mean([1, 3]) + 1e-3 * mean([1, 1, 4, 0]) = -2 + 1.5e-3
    loss = F(M).maddpg_actor_loss(tensor(M, [1, 3]), tensor(M, [[1, -1], [2, 0]]))
    assert float(loss) == pytest.approx(-1.9985, rel=1e-6)
    with pytest.raises(ValueError, match=r"q must be \[B\]"):
        F(M).maddpg_actor_loss(tensor(M, [1, 3, 4]), tensor(M, [[1, -1], [2, 0]]))


def test_gumbel_softmax_with_fixed_uniform_noise(M):
    # u = e^-1: -log(-log u) = 0, so the sample is softmax(logits) = [1/3, 2/3] for logits [0, ln 2];
    # u = e^-e: -log(-log u) = -1, so the first logit drops by 1: [e^-1, 2] / (e^-1 + 2)
    logits = tensor(M, [[0.0, math.log(2.0)], [0.0, math.log(2.0)]])
    uniform = tensor(M, [[math.exp(-1), math.exp(-1)], [math.exp(-math.e), math.exp(-1)]])
    out = M.ops.numpy(F(M).gumbel_softmax_sample(logits, uniform))
    z = math.exp(-1) + 2
    np.testing.assert_allclose(out, [[1 / 3, 2 / 3], [math.exp(-1) / z, 2 / z]], rtol=1e-5)
    with pytest.raises(ValueError, match="must have the shape of logits"):
        F(M).gumbel_softmax_sample(logits, tensor(M, [[0.5, 0.5]]))


def test_squashed_gaussian_with_fixed_noise(M):
    # tanh(0 + 1 * 0.5), tanh(1 + 2 * -0.5) = tanh(0)
    out = F(M).squashed_gaussian_sample(tensor(M, [[0.0, 1.0]]), tensor(M, [[0.0, math.log(2.0)]]),
                                        tensor(M, [[0.5, -0.5]]))
    np.testing.assert_allclose(M.ops.numpy(out), [[math.tanh(0.5), 0.0]], atol=1e-6)


# -- the algorithm -----------------------------------------------------------------------------------


def test_predict_and_sample_discrete(M):
    M.ops.seed(0)
    alg = build(M)
    obs = np.random.default_rng(0).normal(size=(B, OBS_DIMS[0])).astype(np.float32)
    logits = M.ops.numpy(alg.model.policy(tensor(M, obs)))
    probs = M.ops.numpy(alg.predict(obs))
    np.testing.assert_allclose(probs, np.exp(logits) / np.exp(logits).sum(-1, keepdims=True), rtol=1e-5)
    sample = M.ops.numpy(alg.sample(obs))
    assert sample.shape == (B, 3) and sample.min() >= 0 and sample.max() <= 1
    np.testing.assert_allclose(sample.sum(-1), 1.0, rtol=1e-5)
    assert np.abs(sample - probs).max() > 0.05  # the Gumbel noise moved it
    assert M.ops.numpy(alg.predict(obs[0])).shape == (3,)  # one unbatched observation (PARL's agents)
    assert M.ops.numpy(alg.sample(obs[:1])).shape == (1, 3)


def test_sample_with_target_model_uses_the_target_policy(M, monkeypatch):
    M.ops.seed(0)
    alg = build(M)
    obs = np.random.default_rng(0).normal(size=(B, OBS_DIMS[0])).astype(np.float32)
    zero_gumbel_noise = lambda like: tensor(M, np.full(tuple(like.shape), math.exp(-1)))  # noqa: E731
    monkeypatch.setattr(alg, "_uniform", zero_gumbel_noise)
    weights = alg.target_model.get_weights()
    alg.target_model.set_weights({k: 2.0 * v for k, v in weights.items()})
    for use_target, model in ((False, alg.model), (True, alg.target_model)):
        logits = M.ops.numpy(model.policy(tensor(M, obs)))
        expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        np.testing.assert_allclose(M.ops.numpy(alg.sample(obs, use_target_model=use_target)), expected, rtol=1e-5)


def test_predict_and_sample_continuous(M, monkeypatch):
    M.ops.seed(0)
    alg = build(M, BOX, index=1)
    assert alg.continuous_actions
    obs = np.random.default_rng(0).normal(size=(B, OBS_DIMS[1])).astype(np.float32)
    mean, log_std = (M.ops.numpy(x) for x in alg.model.policy(tensor(M, obs)))
    np.testing.assert_allclose(M.ops.numpy(alg.predict(obs)), np.tanh(mean), rtol=1e-5, atol=1e-6)
    sample = M.ops.numpy(alg.sample(obs))
    assert sample.shape == (B, 3) and np.abs(sample).max() <= 1.0
    noise = np.random.default_rng(1).normal(size=(B, 3)).astype(np.float32)
    monkeypatch.setattr(alg, "_normal", lambda like: tensor(M, noise))
    np.testing.assert_allclose(M.ops.numpy(alg.sample(obs)), np.tanh(mean + np.exp(log_std) * noise), rtol=1e-5,
                               atol=1e-6)


def test_q_takes_numpy_lists_and_flattens_b1(M):
    M.ops.seed(0)
    alg = build(M)
    obs_n, act_n, _ = joint_batch(np.random.default_rng(0))
    q = alg.Q(obs_n, act_n)
    assert tuple(q.shape) == (B,)  # the model returns [B, 1]
    expected = M.ops.numpy(alg.model.value([tensor(M, x) for x in obs_n], [tensor(M, x) for x in act_n]))[:, 0]
    np.testing.assert_allclose(M.ops.numpy(q), expected, rtol=1e-6)
    np.testing.assert_allclose(M.ops.numpy(alg.Q(obs_n, act_n, use_target_model=True)), expected, rtol=1e-6)


@pytest.mark.parametrize("act_space, index", [(DISCRETE, 0), (BOX, 1)])
def test_learn_reduces_the_critic_loss_on_a_fixed_batch(M, act_space, index):
    M.ops.seed(0)
    alg = build(M, act_space, index)
    obs_n, act_n, target_q = joint_batch(np.random.default_rng(0), act_space, batch=64)
    before = alg.model.get_weights()
    losses = [float(alg.learn(obs_n, act_n, target_q[:, None] if index else target_q)) for _ in range(100)]
    assert losses[-1] < 0.5 * losses[0], losses[::10]
    assert set(alg.get_info()) == {"train/critic_loss", "train/actor_loss", "train/q_mean"}
    after = alg.model.get_weights()
    assert all(not np.allclose(after[k], before[k]) for k in before if k.startswith("actor"))  # the actor learnt too


def test_actor_step_raises_q_of_its_own_action(M):
    """With the critic held fixed, learn's actor half moves mu_0(o_0) towards higher Q_0 (eq. 5)."""
    M.ops.seed(0)
    alg = build(M, BOX, index=0)
    obs_n, act_n, _ = joint_batch(np.random.default_rng(0), BOX, batch=64)

    def policy_q():
        joint = list(act_n)
        joint[0] = M.ops.numpy(alg.predict(obs_n[0]))
        return float(M.ops.numpy(alg.Q(obs_n, joint)).mean())

    before, critic = policy_q(), alg.model.get_weights()
    alg.critic_optimizer = _NoStep()
    for _ in range(40):
        alg.learn(obs_n, act_n, np.zeros(64, np.float32))
    after = alg.model.get_weights()
    assert all(np.array_equal(after[k], critic[k]) for k in critic if k.startswith("critic"))
    assert policy_q() > before + 0.01  # measured: +0.02 (torch), +0.06 (paddle) from different initial weights


class _NoStep:
    """An optimizer stand-in that never steps: the critic stays fixed."""

    param_groups = []
    _parameter_list = []

    def zero_grad(self, *args, **kwargs):
        pass

    clear_grad = zero_grad

    def step(self):
        pass


def test_sync_target_math(M):
    M.ops.seed(0)
    alg = build(M)
    target0 = alg.target_model.get_weights()
    np.testing.assert_equal(target0, alg.model.get_weights())  # a copy at construction
    alg.model.set_weights({k: v + 1.0 for k, v in target0.items()})
    model0 = alg.model.get_weights()
    alg.sync_target()  # decay None -> 1 - tau: target = (1 - tau) target + tau model
    for k, v in alg.target_model.get_weights().items():
        np.testing.assert_allclose(v, 0.99 * target0[k] + 0.01 * model0[k], rtol=1e-6, atol=1e-6)
    alg.sync_target(decay=0.3)
    after_tau = {k: 0.99 * target0[k] + 0.01 * model0[k] for k in target0}
    for k, v in alg.target_model.get_weights().items():
        np.testing.assert_allclose(v, 0.3 * after_tau[k] + 0.7 * model0[k], rtol=1e-6, atol=1e-6)
    alg.sync_target(decay=0)  # a copy
    np.testing.assert_equal(alg.target_model.get_weights(), model0)


def test_learn_syncs_the_target_softly(M):
    M.ops.seed(0)
    alg = build(M)
    target0 = alg.target_model.get_weights()
    obs_n, act_n, target_q = joint_batch(np.random.default_rng(0))
    alg.learn(obs_n, act_n, target_q)
    model1 = alg.model.get_weights()
    for k, v in alg.target_model.get_weights().items():
        np.testing.assert_allclose(v, 0.99 * target0[k] + 0.01 * model1[k], rtol=1e-5, atol=1e-6)


def test_checkpoint_save_restore_via_agent(M, tmp_path, monkeypatch):
    M.ops.seed(0)
    rng = np.random.default_rng(0)
    agent = M.Agent(build(M))
    for _ in range(3):
        agent.alg.learn(*joint_batch(rng))
    agent.save(tmp_path / "agent_0")
    batches = [joint_batch(rng) for _ in range(3)]
    noise = np.random.default_rng(5).uniform(1e-4, 1 - 1e-4, (3, B, 3)).astype(np.float32)

    def run(a):
        draws = iter(noise)
        with monkeypatch.context() as patch:
            patch.setattr(a.alg, "_uniform", lambda shape: tensor(M, next(draws)))
            return [float(a.alg.learn(*b)) for b in batches], a.alg.get_all_weights()

    expected, expected_w = run(agent)
    M.ops.seed(3)
    fresh = M.Agent(build(M))
    fresh.restore(tmp_path / "agent_0")
    got, got_w = run(fresh)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    for key in expected_w:
        for name, value in expected_w[key].items():
            np.testing.assert_allclose(got_w[key][name], value, rtol=1e-6, atol=1e-7, err_msg=f"{key}.{name}")


def test_device_keyword(M):
    alg = build(M, device="cpu")
    assert str(alg.device) == "cpu"


# -- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(index=2), ValueError, r"agent_index=2 is out of range for act_space of 2 agents"),
    (dict(index=-1), ValueError, r"agent_index=-1 is out of range"),
])
def test_agent_index_out_of_range(M, kwargs, error, match):
    model = ma_model_cls(M.ops.name)(3, 3, 12)
    with pytest.raises(error, match=match):
        M.algs.MADDPG(model, agent_index=kwargs["index"], act_space=DISCRETE, **HP)


def test_bad_constructor_arguments(M):
    model = ma_model_cls(M.ops.name)(3, 3, 12)
    with pytest.raises(TypeError, match="agent_index, this agent's position"):
        M.algs.MADDPG(model, agent_index=None, act_space=DISCRETE, **HP)
    with pytest.raises(TypeError, match="list of EVERY agent's action space"):
        M.algs.MADDPG(model, agent_index=0, act_space=DISCRETE[0], **HP)
    with pytest.raises(ValueError, match=r"act_space\[1\] is MultiDiscrete.*split a MultiDiscrete space"):
        M.algs.MADDPG(model, agent_index=0, act_space=[DISCRETE[0], spaces.MultiDiscrete([3, 2])], **HP)
    with pytest.raises(ValueError, match=r"supports gymnasium Box .* and Discrete"):
        M.algs.MADDPG(model, agent_index=0, act_space=[spaces.Box(-1, 1, (2, 2))], **HP)
    with pytest.raises(ValueError, match=r"gamma in \[0, 1\], got gamma=None"):
        M.algs.MADDPG(model, agent_index=0, act_space=DISCRETE, **{**HP, "gamma": None})
    no_critic_params = type("NoCriticParams", (ma_model_cls(M.ops.name),), {"get_critic_params": None})(3, 3, 12)
    with pytest.raises(ValueError, match="get_critic_params"):
        M.algs.MADDPG(no_critic_params, agent_index=0, act_space=DISCRETE, **HP)


def test_mismatched_agent_counts(M):
    alg = build(M)
    obs_n, act_n, target_q = joint_batch(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"obs_n has 1 entries but act_space has 2 agents"):
        alg.learn(obs_n[:1], act_n, target_q)
    with pytest.raises(ValueError, match=r"act_n has 3 entries but act_space has 2 agents"):
        alg.Q(obs_n, act_n + act_n[:1])
    with pytest.raises(TypeError, match="obs_n must be a list with one"):
        alg.Q(np.stack([obs_n[0], obs_n[0]]), act_n)
    with pytest.raises(ValueError, match=r"act_n\[1\] has width 3 but act_space\[1\] is a Discrete with n = 2"):
        alg.Q(obs_n, [act_n[0], np.zeros((B, 3), np.float32)])
    with pytest.raises(ValueError, match="same batch size"):
        alg.Q(obs_n, [act_n[0], act_n[1][:4]])
    with pytest.raises(ValueError, match=r"MADDPG.learn: the model rejected inputs"):  # obs of another width
        alg.learn([obs_n[0], np.zeros((B, 7), np.float32)], act_n, np.zeros(B, np.float32))


@pytest.mark.parametrize("shape", [(B, 2), (B - 1,), (1, B)])
def test_target_q_of_the_wrong_shape(M, shape):
    alg = build(M)
    obs_n, act_n, _ = joint_batch(np.random.default_rng(0))
    with pytest.raises(ValueError, match=rf"target_q must be float32 \[B\] or \[B, 1\] with B={B}"):
        alg.learn(obs_n, act_n, np.zeros(shape, np.float32))


def test_box_space_with_a_logits_policy_and_vice_versa(M):
    obs = np.zeros((B, OBS_DIMS[0]), np.float32)
    box_logits = build(M, BOX, index=0, continuous=False)
    with pytest.raises(ValueError, match=r"act_space\[0\] is a Box \(continuous\), so model.policy\(obs\) must return"
                                         r" a pair \(mean, log_std\)"):
        box_logits.sample(obs)
    discrete_pair = build(M, [spaces.Discrete(2), spaces.Discrete(2)], index=0, continuous=True)
    with pytest.raises(ValueError, match=r"act_space\[0\] is Discrete, so model.policy\(obs\) must return logits"):
        discrete_pair.predict(obs)
    wrong_width = build(M, [spaces.Discrete(5), spaces.Discrete(2)], index=0)
    wrong_width.model = build(M).model  # logits of 3 for a Discrete(5)
    with pytest.raises(ValueError, match=r"logits of shape \[B=8, 5\]"):
        wrong_width.predict(obs)


# -- torch vs paddle: the same update -----------------------------------------------------------------


def _copy_torch_to_paddle(torch_model, paddle_model):
    paddle_model.set_weights({k: v.T if v.ndim == 2 and k.endswith("weight") else v
                              for k, v in torch_model.get_weights().items()})


@pytest.mark.parametrize("act_space, index", [(DISCRETE, 0), (BOX, 1)])
def test_paddle_update_equals_torch_update(act_space, index):
    pytest.importorskip("torch")
    pytest.importorskip("paddle")
    T, P = models("torch"), models("paddle")
    T.ops.seed(0)
    t_alg, p_alg = build(T, act_space, index), build(P, act_space, index)
    _copy_torch_to_paddle(t_alg.model, p_alg.model)
    p_alg.sync_target(decay=0)
    initial = t_alg.model.get_weights()
    rng = np.random.default_rng(0)
    batches = [joint_batch(rng, act_space, batch=32) for _ in range(4)]
    dim = act_dims(act_space)[index]
    noise = np.random.default_rng(1).uniform(1e-4, 1 - 1e-4, (4, 32, dim)).astype(np.float32)
    results = {}
    for name, M, alg in (("torch", T, t_alg), ("paddle", P, p_alg)):
        draws = iter(noise if not alg.continuous_actions else (noise - 0.5) * 4)  # normals: any fixed numbers
        draw = lambda like, M=M, draws=draws: tensor(M, next(draws))  # noqa: E731
        alg._uniform = alg._normal = draw
        losses = [float(alg.learn(*b)) for b in batches]
        results[name] = (losses, alg.get_all_weights())
    np.testing.assert_allclose(results["paddle"][0], results["torch"][0], rtol=1e-4, atol=1e-5)
    for key, t_model in results["torch"][1].items():
        for param, t_value in t_model.items():
            p_value = results["paddle"][1][key][param]
            p_value = p_value.T if p_value.ndim == 2 and param.endswith("weight") else p_value
            np.testing.assert_allclose(p_value, t_value, rtol=0, atol=1e-4, err_msg=f"{key}.{param}")
    moved = max(float(np.abs(results["torch"][1]["model"][k] - v).max()) for k, v in initial.items())
    assert moved > 1e-2  # 4 Adam steps of lr 1e-2 moved the weights far beyond the tolerance
