"""COMA on both backends (backend a pytest parameter): the counterfactual advantage, the epsilon policy and the
TD(lambda) targets against hand-computed cases (and against PARL's n-step formula), a target network the TD
target really reads (perturbing each network and each input), learning a cooperative matrix game, sync_target,
save / restore, bad input, and the same update on torch and paddle."""

import copy
import functools

import numpy as np
import pytest

from parl_algorithms.algorithms import coma as coma_ref

N_AGENTS, N_ACTIONS, HIDDEN = 2, 3, 8
ACTOR_DIM = 4 + N_ACTIONS + N_AGENTS  # obs 4, last action, agent id (PARL's actor inputs)
CRITIC_DIM = 6


def _tensor(M, array, dtype=None):
    array = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
    if M.ops.name == "torch":
        import torch

        return torch.as_tensor(array)
    import paddle

    return paddle.to_tensor(array)


@functools.cache
def coma_model_class(backend):
    """PARL's ComaModel shape (``actor_model`` with ``init_hidden``, ``critic_model``) on ``backend``, with a
    recurrent cell written from Linear layers so both frameworks hold the same weights."""
    from algo_models import models

    B = models(backend).ops
    if backend == "torch":
        import torch

        zeros = functools.partial(torch.zeros, 1, HIDDEN)
    else:
        import paddle

        zeros = functools.partial(paddle.zeros, [1, HIDDEN])

    class Actor(B.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = B.nn.Linear(ACTOR_DIM, HIDDEN)
            self.rnn_x = B.nn.Linear(HIDDEN, HIDDEN)
            self.rnn_h = B.nn.Linear(HIDDEN, HIDDEN)
            self.fc2 = B.nn.Linear(HIDDEN, N_ACTIONS)

        def init_hidden(self):
            return zeros()

        def forward(self, obs, h):
            h = B.tanh(self.rnn_x(B.tanh(self.fc1(obs))) + self.rnn_h(h.reshape([-1, HIDDEN])))
            return self.fc2(h), h

    class Critic(B.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = B.nn.Linear(CRITIC_DIM, 16)
            self.fc2 = B.nn.Linear(16, N_ACTIONS)

        def forward(self, inputs):
            return self.fc2(B.tanh(self.fc1(inputs)))

    class ComaTestModel(B.Model):
        def __init__(self, n_agents=N_AGENTS):
            super().__init__()
            self.n_agents, self.n_actions = n_agents, N_ACTIONS
            self.actor_model = Actor()
            self.critic_model = Critic()

        def policy(self, obs, h):
            return self.actor_model(obs, h)

        def value(self, inputs):
            return self.critic_model(inputs)

        def get_actor_params(self):
            return self.actor_model.parameters()

        def get_critic_params(self):
            return self.critic_model.parameters()

    return ComaTestModel


def _coma(M, model=None, **kwargs):
    model = coma_model_class(M.ops.name)() if model is None else model
    kwargs = {"grad_norm_clip": 10.0, "actor_lr": 1e-2, "critic_lr": 1e-2, "gamma": 0.9, "td_lambda": 0.8,
              **kwargs}
    if M.ops.name == "torch":
        kwargs.setdefault("device", "cpu")
    return M.algs.COMA(model, N_ACTIONS, N_AGENTS, **kwargs)


def episode_batch(rng, lengths=(4, 2), steps=4, n_agents=N_AGENTS, terminated_last=True):
    """PARL's batch layout (numpy) of len(lengths) episodes padded to ``steps``."""
    E = len(lengths)
    padded = np.zeros((E, steps, 1), np.float32)
    isover = np.zeros((E, steps, 1), np.float32)
    for e, length in enumerate(lengths):
        padded[e, length:] = 1
        isover[e, length - 1:] = 1
    avail = np.ones((E, steps, n_agents, N_ACTIONS), np.float32)
    avail[:, :, 0, 1] = 0  # agent 0 may never take action 1
    avail[padded[..., 0] == 1] = 0
    u = rng.integers(0, N_ACTIONS, (E, steps, n_agents, 1))
    u[:, :, 0][u[:, :, 0] == 1] = 2
    u[padded[..., 0] == 1] = 0
    batch = dict(r=(rng.normal(size=(E, steps, 1)) * (1 - padded)).astype(np.float32), u=u, avail_u=avail,
                 padded=padded, isover=isover,
                 actor_inputs=rng.normal(size=(E, steps, n_agents, ACTOR_DIM)).astype(np.float32),
                 critic_inputs=rng.normal(size=(E, steps, n_agents, CRITIC_DIM)).astype(np.float32),
                 critic_inputs_next=rng.normal(size=(E, steps, n_agents, CRITIC_DIM)).astype(np.float32))
    if not terminated_last:
        batch["terminated"] = np.zeros((E, steps, 1), np.float32)
        batch["u_next"] = rng.integers(0, N_ACTIONS, (E, steps, n_agents, 1))
    return batch


# ---------------------------------------------------------------------------------------------------------
# pure functions against hand-computed cases


def test_counterfactual_advantage_hand_computed(M):
    mf = _marl_functional(M)
    q = _tensor(M, [[[1.0, 2.0, 3.0], [0.0, 4.0, -2.0]]], np.float32)  # [1, n_agents=2, A=3]
    pi = _tensor(M, [[[0.2, 0.3, 0.5], [0.5, 0.5, 0.0]]], np.float32)
    actions = _tensor(M, [[2, 0]], np.int64)
    advantage, q_taken, baseline = mf.coma_counterfactual_advantage(q, pi, actions)
    # agent 0: baseline 0.2*1 + 0.3*2 + 0.5*3 = 2.3, Q(s, u) = 3; agent 1: baseline 0 + 2 + 0 = 2, Q = 0
    np.testing.assert_allclose(M.ops.numpy(baseline), [[2.3, 2.0]], rtol=1e-6)
    np.testing.assert_allclose(M.ops.numpy(q_taken), [[3.0, 0.0]])
    np.testing.assert_allclose(M.ops.numpy(advantage), [[0.7, -2.0]], rtol=1e-6)
    with pytest.raises(ValueError, match="actions"):
        mf.coma_counterfactual_advantage(q, pi, _tensor(M, [[2, 0, 1]], np.int64))


def test_policy_probs_mix_epsilon_over_the_available_actions(M):
    mf = _marl_functional(M)
    logits = _tensor(M, [[0.0, np.log(3.0), 5.0], [1.0, 2.0, 3.0]], np.float32)
    avail = _tensor(M, [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    probs = M.ops.numpy(mf.coma_policy_probs(logits, avail, 0.2))
    # masked softmax [0.25, 0.75, 0]; 0.8 * that + 0.2 / 2 available; a padded row (nothing available) is 0
    np.testing.assert_allclose(probs, [[0.3, 0.7, 0.0], [0.0, 0.0, 0.0]], rtol=1e-6, atol=1e-7)


# r, Q' (the target network's next value), isover, padded, terminated of two rows (one agent), gamma 0.5
_R = [[1.0, 2.0, 3.0], [1.0, 2.0, 9.0]]
_QN = [[10.0, 20.0, 30.0], [10.0, 20.0, 99.0]]
_OVER = [[0, 0, 1], [0, 1, 1]]
_PAD = [[0, 0, 0], [0, 0, 1]]
HAND = {
    # lambda 0, one-step TD: G = r + 0.5 Q', the terminal step r only
    0.0: [[1 + 5, 2 + 10, 3], [1 + 5, 2, 0]],
    # lambda 1, Monte Carlo: 3; 2 + 0.5 * 3; 1 + 0.5 * 3.5 / row 2: 2; 1 + 0.5 * 2; padding 0
    1.0: [[2.75, 3.5, 3.0], [2.0, 2.0, 0.0]],
    # lambda 0.5: 3; 2 + 0.5 (0.5 * 20 + 0.5 * 3) = 7.75; 1 + 0.5 (0.5 * 10 + 0.5 * 7.75) = 5.4375
    #             row 2: 2; 1 + 0.5 (0.5 * 10 + 0.5 * 2) = 4; 0
    0.5: [[5.4375, 7.75, 3.0], [4.0, 2.0, 0.0]],
}


def _flags(values):
    return np.asarray(values, np.float32)[..., None]


@pytest.mark.parametrize("td_lambda", sorted(HAND))
def test_td_lambda_targets_hand_computed_with_padding(M, td_lambda):
    mf = _marl_functional(M)
    args = (_flags(_R), np.asarray(_QN, np.float32)[..., None], _flags(_OVER), _flags(_OVER), _flags(_PAD))
    np.testing.assert_allclose(coma_ref.td_lambda_targets(*args, 0.5, td_lambda)[..., 0], HAND[td_lambda])
    out = mf.coma_td_lambda_targets(*(_tensor(M, a) for a in args), 0.5, td_lambda)
    np.testing.assert_allclose(M.ops.numpy(out)[..., 0], HAND[td_lambda], rtol=1e-6)


def test_td_lambda_bootstraps_a_truncated_episode(M):
    mf = _marl_functional(M)
    terminated = _flags([[0, 0, 0], [0, 1, 1]])  # row 1 hit a time limit at its last step
    args = (_flags(_R), np.asarray(_QN, np.float32)[..., None], terminated, _flags(_OVER), _flags(_PAD))
    # row 1: 3 + 0.5 * 30 = 18; 2 + 0.5 (0.5 * 20 + 0.5 * 18) = 11.5; 1 + 0.5 (0.5 * 10 + 0.5 * 11.5) = 6.375
    expected = [[6.375, 11.5, 18.0], [4.0, 2.0, 0.0]]
    np.testing.assert_allclose(coma_ref.td_lambda_targets(*args, 0.5, 0.5)[..., 0], expected)
    np.testing.assert_allclose(M.ops.numpy(mf.coma_td_lambda_targets(*(_tensor(M, a) for a in args), 0.5, 0.5))
                               [..., 0], expected, rtol=1e-6)


def _parl_td_target(r, q_targets, isover, padded, gamma, td_lambda):
    """PARL 2.2.1's COMA._cal_td_target (the weighted sum of n-step returns), transcribed to numpy."""
    ep_num, tr_num, n_agents = q_targets.shape
    mask = np.repeat(1 - padded, n_agents, axis=2)
    notover = np.repeat(1 - isover, n_agents, axis=2)
    r = np.repeat(r, n_agents, axis=2)
    n_step_return = np.zeros((ep_num, tr_num, n_agents, tr_num))
    for tr_id in range(tr_num - 1, -1, -1):
        n_step_return[:, tr_id, :, 0] = (r[:, tr_id] + gamma * q_targets[:, tr_id] * notover[:, tr_id]) * mask[:, tr_id]
        for n in range(1, tr_num - tr_id):
            n_step_return[:, tr_id, :, n] = (r[:, tr_id] + gamma * n_step_return[:, tr_id + 1, :, n - 1]) \
                * mask[:, tr_id]
    lambda_return = np.zeros((ep_num, tr_num, n_agents))
    for tr_id in range(tr_num):
        returns = np.zeros((ep_num, n_agents))
        for n in range(1, tr_num - tr_id):
            returns += pow(td_lambda, n - 1) * n_step_return[:, tr_id, :, n - 1]
        lambda_return[:, tr_id] = (1 - td_lambda) * returns + pow(td_lambda, tr_num - tr_id - 1) * \
            n_step_return[:, tr_id, :, tr_num - tr_id - 1]
    return lambda_return


@pytest.mark.parametrize("td_lambda", [0.0, 0.3, 0.8, 1.0])
def test_td_lambda_recursion_equals_parls_n_step_sum(td_lambda):
    rng = np.random.default_rng(1)
    batch = episode_batch(rng, lengths=(6, 3, 1, 5), steps=6)
    q_next = rng.normal(size=(4, 6, N_AGENTS))
    ours = coma_ref.td_lambda_targets(batch["r"], q_next, batch["isover"], batch["isover"], batch["padded"], 0.9,
                                   td_lambda)
    np.testing.assert_allclose(ours, _parl_td_target(batch["r"], q_next, batch["isover"], batch["padded"], 0.9,
                                                     td_lambda), rtol=1e-10, atol=1e-12)


def test_critic_and_actor_losses_hand_computed(M):
    mf = _marl_functional(M)
    q_taken = _tensor(M, [[[1.0, 2.0], [3.0, 0.0]]], np.float32)  # [E=1, T=2, n=2]
    targets = _tensor(M, [[[2.0, 0.0], [9.0, 5.0]]], np.float32)
    mask = _tensor(M, [[[1.0, 1.0], [0.0, 0.0]]], np.float32)  # step 1 is padding
    # (1 + 4) / 2 real entries
    assert float(mf.coma_critic_loss(q_taken, targets, mask)) == pytest.approx(2.5)
    pi = _tensor(M, [[[[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]], [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]], np.float32)
    actions = _tensor(M, [[[1, 2], [0, 0]]], np.int64)
    advantage = _tensor(M, [[[2.0, -1.0], [7.0, 7.0]]], np.float32)
    loss, entropy = mf.coma_actor_loss(pi, actions, advantage, mask)
    # -(2 log 0.5 - log 0.5) / 2 = -0.5 log 0.5; entropy (log 2 + 1.5 log 2) / 2
    assert float(loss) == pytest.approx(-0.5 * np.log(0.5), rel=1e-6)
    assert float(entropy) == pytest.approx(1.25 * np.log(2.0), rel=1e-6)
    with_bonus, _ = mf.coma_actor_loss(pi, actions, advantage, mask, entropy_coeff=0.1)
    assert float(with_bonus) == pytest.approx(-0.5 * np.log(0.5) - 0.125 * np.log(2.0), rel=1e-6)


def _marl_functional(M):
    if M.ops.name == "torch":
        from parl_algorithms.torch import marl_functional
    else:
        from parl_algorithms.paddle import marl_functional
    return marl_functional


# ---------------------------------------------------------------------------------------------------------
# the algorithm


def _target_mean(M, model, batch, edit=None):
    """``train/target_mean`` of a first learn call of a COMA built on a copy of ``model`` (``edit(alg)`` first)."""
    alg = _coma(M, copy.deepcopy(model))
    if edit is not None:
        edit(alg)
    alg.learn(copy.deepcopy(batch), 0.1)
    return alg.get_info()["train/target_mean"]


def _bump_critic_bias(M, model, delta):
    bias = model.critic_model.fc2.bias
    if M.ops.name == "torch":
        import torch

        with torch.no_grad():
            bias.add_(delta)
    else:
        bias.set_value(bias.numpy() + delta)


def test_the_td_target_reads_the_target_network_on_the_next_inputs(M):
    """Fails for PARL 2.2.1's COMA, whose target is the online network on critic_inputs."""
    M.ops.seed(0)
    model = coma_model_class(M.ops.name)()
    batch = episode_batch(np.random.default_rng(0))
    base = _target_mean(M, model, batch)

    # the target network up by delta on every action: every Q'_t grows by delta, the targets by the TD(lambda)
    # targets of rewards 0 and Q' = delta, computed by the numpy reference
    delta = 1.5
    shift = coma_ref.td_lambda_targets(np.zeros_like(batch["r"]), np.full((2, 4, N_AGENTS), delta),
                                       batch["isover"], batch["isover"], batch["padded"], 0.9, 0.8)
    mask = np.broadcast_to(1 - batch["padded"], shift.shape)
    expected = base + (shift * mask).sum() / mask.sum()
    assert expected - base > 0.2
    moved = _target_mean(M, model, batch, lambda alg: _bump_critic_bias(M, alg.target_model, delta))
    assert moved == pytest.approx(expected, rel=1e-5)

    # the online network moved alone: the target does not move
    assert _target_mean(M, model, batch, lambda alg: _bump_critic_bias(M, alg.model, delta)) == \
        pytest.approx(base, rel=1e-6)

    # the inputs: critic_inputs_next moves the target, critic_inputs does not
    other = dict(batch, critic_inputs=batch["critic_inputs"] + 1.0)
    assert _target_mean(M, model, other) == pytest.approx(base, rel=1e-6)
    other = dict(batch, critic_inputs_next=batch["critic_inputs_next"] + 1.0)
    assert abs(_target_mean(M, model, other) - base) > 1e-3


def test_learn_returns_losses_and_the_critic_loss_is_its_td_error(M):
    M.ops.seed(0)
    alg = _coma(M)
    batch = episode_batch(np.random.default_rng(0), terminated_last=False)
    critic_loss, actor_loss = alg.learn(batch, 0.05)
    info = alg.get_info()
    assert float(critic_loss) == pytest.approx(info["train/critic_loss"], rel=1e-6)
    assert float(actor_loss) == pytest.approx(info["train/actor_loss"], rel=1e-6)
    assert info["train/critic_grad_norm"] > 0 and info["train/actor_grad_norm"] > 0
    assert 0 < info["train/entropy"] < np.log(N_ACTIONS) + 1e-6


def _matrix_game_batch(M, alg, rng, episodes, epsilon):
    """One-step cooperative game: team reward 1 when both agents take action 2, else 0. Actor input: the agent's
    one-hot id in the PARL layout; critic input: the other agent's one-hot action and the agent's id."""
    actor_inputs = np.zeros((episodes, 1, N_AGENTS, ACTOR_DIM), np.float32)
    for a in range(N_AGENTS):
        actor_inputs[:, 0, a, 4 + N_ACTIONS + a] = 1
    h = alg.init_hidden(episodes)
    probs, _ = alg.predict(_tensor(M, actor_inputs.reshape(-1, ACTOR_DIM)), h.reshape([-1, HIDDEN]))
    probs = (1 - epsilon) * M.ops.numpy(probs) + epsilon / N_ACTIONS
    u = np.array([rng.choice(N_ACTIONS, p=p / p.sum()) for p in probs]).reshape(episodes, 1, N_AGENTS, 1)
    critic_inputs = np.zeros((episodes, 1, N_AGENTS, CRITIC_DIM), np.float32)
    for a in range(N_AGENTS):
        critic_inputs[np.arange(episodes), 0, a, u[:, 0, 1 - a, 0]] = 1
        critic_inputs[:, 0, a, N_ACTIONS + a] = 1
    reward = ((u[:, 0, 0, 0] == 2) & (u[:, 0, 1, 0] == 2)).astype(np.float32).reshape(episodes, 1, 1)
    return dict(r=reward, u=u, avail_u=np.ones((episodes, 1, N_AGENTS, N_ACTIONS), np.float32),
                padded=np.zeros((episodes, 1, 1), np.float32), isover=np.ones((episodes, 1, 1), np.float32),
                actor_inputs=actor_inputs, critic_inputs=critic_inputs,
                critic_inputs_next=np.zeros_like(critic_inputs))


def test_learn_solves_a_cooperative_matrix_game(M):
    M.ops.seed(0)
    rng = np.random.default_rng(0)
    alg = _coma(M, actor_lr=2e-2, critic_lr=2e-2)
    greedy = _matrix_game_batch(M, alg, rng, 1, 0.0)
    for it in range(150):
        alg.learn(_matrix_game_batch(M, alg, rng, 16, 0.2), 0.2)
        if it % 20 == 0:
            alg.sync_target()
    probs, _ = alg.predict(_tensor(M, greedy["actor_inputs"].reshape(-1, ACTOR_DIM)),
                           alg.init_hidden(1).reshape([-1, HIDDEN]))
    probs = M.ops.numpy(probs)
    assert (probs.argmax(-1) == 2).all(), probs  # both agents learnt the cooperative action
    assert probs[:, 2].min() > 0.6, probs


def test_sync_target_copies_or_averages(M):
    M.ops.seed(0)
    alg = _coma(M)
    alg.learn(episode_batch(np.random.default_rng(0)), 0.1)
    online, target = alg.model.get_weights(), alg.target_model.get_weights()
    assert max(np.abs(online[k] - target[k]).max() for k in online) > 1e-4
    alg.sync_target(decay=0.25)
    averaged = alg.target_model.get_weights()
    for k in online:
        np.testing.assert_allclose(averaged[k], 0.25 * target[k] + 0.75 * online[k], rtol=1e-5, atol=1e-7)
    alg.sync_target()
    for k, v in alg.target_model.get_weights().items():
        np.testing.assert_array_equal(v, online[k])


def test_init_hidden_gives_each_agent_its_own_state(M):
    alg = _coma(M)
    h = alg.init_hidden(3)
    assert tuple(h.shape) == (3, N_AGENTS, HIDDEN)
    h[0, 0] = _tensor(M, np.ones(HIDDEN, np.float32))  # PARL's sc2_agent writes an agent's slot like this
    assert float(h[0, 1].sum()) == 0.0 and float(h[0, 0].sum()) == HIDDEN


def test_save_restore_resumes_the_same_updates(M, tmp_path):
    M.ops.seed(0)
    rng = np.random.default_rng(0)
    batches = [episode_batch(rng) for _ in range(3)]
    agent = M.Agent(_coma(M))
    agent.alg.learn(batches[0], 0.1)
    agent.save(str(tmp_path / "coma.ckpt"))
    M.ops.seed(1)
    other = M.Agent(_coma(M))
    other.restore(str(tmp_path / "coma.ckpt"))
    for batch in batches[1:]:
        a, b = agent.alg.learn(copy.deepcopy(batch), 0.1), other.alg.learn(copy.deepcopy(batch), 0.1)
        np.testing.assert_allclose([float(x) for x in a], [float(x) for x in b], rtol=1e-6)
    restored = other.alg.get_all_weights()
    for key, value in agent.alg.get_all_weights().items():
        for name, w in value.items():
            np.testing.assert_allclose(restored[key][name], w, rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# bad input


def test_none_hyperparameters_take_parls_config(M):
    alg = M.algs.COMA(coma_model_class(M.ops.name)(), N_ACTIONS, N_AGENTS)
    assert (alg.grad_norm_clip, alg.actor_lr, alg.critic_lr, alg.gamma, alg.td_lambda) == (10.0, 1e-4, 1e-3, 0.99,
                                                                                         0.8)


def test_bad_constructor_arguments(M):
    import gymnasium as gym

    model = coma_model_class(M.ops.name)
    with pytest.raises(ValueError, match="n_agents=3 but COMA got n_agents=2"):
        M.algs.COMA(model(n_agents=3), N_ACTIONS, N_AGENTS)
    with pytest.raises(ValueError, match="MADDPG or MAPPO"):
        M.algs.COMA(model(), gym.spaces.Box(-1, 1, (2,)), N_AGENTS)
    assert M.algs.COMA(model(), gym.spaces.Discrete(N_ACTIONS), N_AGENTS).n_actions == N_ACTIONS
    with pytest.raises(ValueError, match="td_lambda in \\[0, 1\\]"):
        M.algs.COMA(model(), N_ACTIONS, N_AGENTS, td_lambda=1.5)
    with pytest.raises(ValueError, match="n_agents an int"):
        M.algs.COMA(model(), N_ACTIONS, 0)


BAD_BATCHES = {
    "missing padded": (lambda b: {k: v for k, v in b.items() if k != "padded"}, "lacks \\['padded'\\]"),
    "three agents": (lambda b: dict(b, u=np.zeros((2, 4, 3, 1), np.int64)), "the batch has 3 agents"),
    "unpadded after padding": (lambda b: dict(b, padded=_set(b["padded"], (1, 2, 0), 0.0)), "wrong padding"),
    "no isover at an episode's end": (lambda b: dict(b, isover=_set(b["isover"], (0, 3, 0), 0.0)), "isover = 1"),
    "steps after isover": (lambda b: dict(b, isover=_set(b["isover"], (0, 1, 0), 1.0)), "after isover"),
    "padding flags not 0 / 1": (lambda b: dict(b, padded=b["padded"] * 0.5), "0 / 1 flags"),
    "fractional actions": (lambda b: dict(b, u=b["u"] + 0.5), "MADDPG or MAPPO"),
    "action out of range": (lambda b: dict(b, u=b["u"] + N_ACTIONS), "outside \\[0, n_actions=3\\)"),
    "reward per agent": (lambda b: dict(b, r=np.repeat(b["r"], 2, axis=2)), "team reward"),
    "nothing available": (lambda b: dict(b, avail_u=np.zeros_like(b["avail_u"])), "no available action"),
    "critic inputs next of another size": (lambda b: dict(b, critic_inputs_next=b["critic_inputs_next"][..., :3]),
                                           "shape of batch\\['critic_inputs'\\]"),
}


def _set(array, index, value):
    array = array.copy()
    array[index] = value
    return array


@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_bad_batches_name_the_fix(M, case):
    alg = _coma(M)
    edit, message = BAD_BATCHES[case]
    with pytest.raises(ValueError, match=message):
        alg.learn(edit(episode_batch(np.random.default_rng(0))), 0.1)


def test_bad_epsilon_and_batch_type(M):
    alg = _coma(M)
    with pytest.raises(ValueError, match="epsilon"):
        alg.learn(episode_batch(np.random.default_rng(0)), None)
    with pytest.raises(TypeError, match="dict"):
        alg.learn([1, 2], 0.1)


def test_a_critic_without_a_q_per_action_is_named(M):
    model = coma_model_class(M.ops.name)()
    model.critic_model.fc2 = M.ops.nn.Linear(16, 1)
    alg = M.algs.COMA(model, N_ACTIONS, N_AGENTS)
    with pytest.raises(ValueError, match="Q of every action"):
        alg.learn(episode_batch(np.random.default_rng(0)), 0.1)


# ---------------------------------------------------------------------------------------------------------
# torch and paddle: the same update


def test_paddle_update_equals_torch_update():
    pytest.importorskip("torch")
    pytest.importorskip("paddle")
    from algo_models import models
    from test_algorithms_equivalence import copy_torch_weights

    T, P = models("torch"), models("paddle")
    T.ops.seed(0)
    torch_model, paddle_model = coma_model_class("torch")(), coma_model_class("paddle")()
    copy_torch_weights(torch_model, paddle_model)
    initial = torch_model.get_weights()
    algs = {"torch": _coma(T, torch_model, entropy_coeff=0.01), "paddle": _coma(P, paddle_model, entropy_coeff=0.01)}
    losses = {}
    for name, alg in algs.items():
        rng = np.random.default_rng(0)
        losses[name] = []
        for step in range(4):
            out = alg.learn(episode_batch(rng, terminated_last=step % 2 == 0), 0.1)
            losses[name].append([float(x) for x in out])
            if step == 1:
                alg.sync_target()
    np.testing.assert_allclose(losses["paddle"], losses["torch"], rtol=1e-4, atol=1e-5)
    # RMSprop's first steps move a weight by up to lr / sqrt(1 - 0.99) = 10 lr whatever the gradient's size, and
    # its epsilon sits outside the square root on torch and inside on paddle: weights whose gradient is near 0
    # differ by a small fraction of a step, so the tolerance is 1 % of the largest step
    atol = 0.01 * 10 * 1e-2
    for key in ("model", "target_model"):
        t_weights = getattr(algs["torch"], key).get_weights()
        for param, p_value in getattr(algs["paddle"], key).get_weights().items():
            p_value = p_value.T if p_value.ndim == 2 and param.endswith("weight") else p_value
            np.testing.assert_allclose(p_value, t_weights[param], rtol=0, atol=atol, err_msg=f"{key}.{param}")
    moved = max(float(np.abs(algs["torch"].model.get_weights()[k] - v).max()) for k, v in initial.items())
    assert moved > 50 * atol


def test_torch_rmsprop_step_equals_torch_optim():
    torch = pytest.importorskip("torch")
    from parl_algorithms.torch.coma import RMSprop

    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(3))]
    ref = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    opt_ours, opt_ref = RMSprop(ours, lr=1e-2), torch.optim.RMSprop(ref, lr=1e-2)
    for _ in range(3):
        grads = [torch.randn_like(p) for p in ours]
        for params, opt in ((ours, opt_ours), (ref, opt_ref)):
            opt.zero_grad()
            for p, g in zip(params, grads, strict=True):
                p.grad = g.clone()
            opt.step()
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    state_ours, state_ref = opt_ours.state_dict(), opt_ref.state_dict()
    torch.testing.assert_close(state_ours["state"], state_ref["state"])
