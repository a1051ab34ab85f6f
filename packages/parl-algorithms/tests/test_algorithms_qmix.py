"""QMIX (Rashid et al. 2018) on torch and paddle: the masked TD loss and Double-Q target on hand-computed cases,
mixer monotonicity, learning on a fixed batch, target sync, checkpoints, bad input, and the same update on
both backends."""

import copy

import numpy as np
import pytest
from qmix_models import episode_batch, qmix_models

BACKENDS = ("torch", "paddle")


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One intra-op thread for these tiny networks (on a loaded 2-core machine torch's thread pool makes a
    GRU step ~100x slower); restored afterwards."""
    try:
        import torch
    except ImportError:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(params=BACKENDS)
def Q(request):  # noqa: N802 (a namespace of model classes)
    return qmix_models(request.param)


def _functional(Q):
    import importlib

    return importlib.import_module(f"parl_algorithms.{Q.name}.marl_functional")


# -- pure functions, hand-computed -------------------------------------------------------------------------

TARGET_QS = [[[[5.0, 1.0, 2.0], [0.0, 3.0, 9.0]]]]  # [B=1, T=1, n_agents=2, n_actions=3]
ONLINE_QS = [[[[1.0, 4.0, 0.0], [7.0, 2.0, 8.0]]]]
AVAIL = [[[[1, 0, 1], [1, 1, 0]]]]


def test_target_max_q_ignores_unavailable_actions(Q):
    f = _functional(Q)
    target, avail = Q.tensor(np.float32(TARGET_QS)), Q.tensor(np.array(AVAIL, bool))
    # max over the available actions: agent 0 max(5, 2) (not 1); agent 1 max(0, 3) (not 9, unavailable)
    np.testing.assert_allclose(Q.numpy(f.qmix_target_max_q(target, avail)), [[[5.0, 3.0]]])
    # Double-Q: the online argmax over available actions (agent 0: action 0, as 4 is unavailable; agent 1:
    # action 0, as 8 is unavailable), valued by the target network: 5 and 0
    online = Q.tensor(np.float32(ONLINE_QS))
    np.testing.assert_allclose(Q.numpy(f.qmix_target_max_q(target, avail, online)), [[[5.0, 0.0]]])
    with pytest.raises(ValueError, match="same shape"):
        f.qmix_target_max_q(target, Q.tensor(np.ones((1, 1, 2, 4), bool)))


def test_td_loss_hand_computed(Q):
    f = _functional(Q)

    def col(values):
        return Q.tensor(np.float32(values).reshape(1, -1, 1))

    # y0 = 1 + 0.5 * 10 = 6 -> delta 5; y1 = 0 (terminal: no bootstrap) -> delta -2; step 2 is padding (mask 0)
    loss, mean_td = f.qmix_td_loss(col([1, 2, 3]), col([10, 20, 30]), col([1, 0, 5]), col([0, 1, 1]),
                                   col([1, 1, 0]), gamma=0.5)
    assert float(loss) == pytest.approx((25 + 4) / 2) and float(mean_td) == pytest.approx((5 - 2) / 2)
    with pytest.raises(ValueError, match=r"\[B, T, 1\]"):
        f.qmix_td_loss(col([1])[0], col([1])[0], col([1])[0], col([1])[0], col([1])[0], gamma=0.5)


# -- learn on a hand-computed batch ------------------------------------------------------------------------

W = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # LinearAgent: q_i = obs_i @ W, obs_dim 2, n_actions 3


def hand_batch():
    """One episode of T=4: steps 0 and 1 real, step 1 terminal, steps 2-3 padding (filled = 1, PARL's zeros,
    with a garbage reward that must not count)."""
    obs = np.zeros((1, 4, 2, 2), np.float32)
    obs[0, 0] = [[1, 0], [0, 1]]  # Q: agent 0 [1, 2, 3], agent 1 [4, 5, 6]
    obs[0, 1] = [[0, 1], [1, 0]]  # Q: agent 0 [4, 5, 6], agent 1 [1, 2, 3]
    avail = np.zeros((1, 4, 2, 3), np.float32)
    avail[0, 0] = 1
    avail[0, 1] = [[0, 1, 1], [1, 1, 0]]  # agent 1's best action (2, Q 3) is unavailable at step 1
    return dict(state_batch=np.zeros((1, 4, 3), np.float32),
                actions_batch=np.array([[[0, 1], [2, 0], [0, 0], [0, 0]]]),
                reward_batch=np.float32([1, 2, 100, 100]).reshape(1, 4, 1),
                terminated_batch=np.float32([0, 1, 1, 1]).reshape(1, 4, 1),
                obs_batch=obs, available_actions_batch=avail,
                filled_batch=np.float32([0, 0, 1, 1]).reshape(1, 4, 1))


@pytest.mark.parametrize("double_q", [True, False])
def test_learn_masked_td_error_hand_computed(Q, double_q):
    alg = Q.QMIX(Q.LinearAgent(W), Q.SumMixer(2), double_q=double_q, gamma=0.5, lr=1e-3, device="cpu")
    # Q_tot(0) = Q_0(a=0) + Q_1(a=1) = 1 + 5 = 6; Q_tot(1) = Q_0(a=2) + Q_1(a=0) = 6 + 1 = 7.
    # Target at step 0 (online = target weights): agent 0 max over actions {1, 2} = 6, agent 1 over {0, 1} = 2
    # (not its unavailable 3): y0 = 1 + 0.5 * 8 = 5, delta -1. Step 1 is terminal: y1 = r1 = 2, delta -5 (PARL's
    # (1-filled)(1-terminated) mask would drop it). Steps 2 and 3 (padding, reward 100) are excluded.
    loss, mean_td = alg.learn(**hand_batch())
    assert isinstance(loss, float) and isinstance(mean_td, float)
    assert loss == pytest.approx((1 + 25) / 2) and mean_td == pytest.approx((-1 - 5) / 2)


@pytest.mark.parametrize("double_q, expected", [(True, ((35**2 + 25) / 2, (35 - 5) / 2)),
                                                 (False, ((40**2 + 25) / 2, (40 - 5) / 2))])
def test_double_q_uses_online_argmax_and_target_value(Q, double_q, expected):
    alg = Q.QMIX(Q.LinearAgent(W), Q.SumMixer(2), double_q=double_q, gamma=0.5, lr=1e-3, device="cpu")
    alg.target_agent_model.set_weights({"w": np.float32([[10, 30, 20], [40, 60, 50]])})
    # step 1, agent 0 (obs [0, 1]): target row [40, 60, 50], actions {1, 2}: online argmax 2 -> 50 (max: 60);
    # agent 1 (obs [1, 0]): target row [10, 30, 20], actions {0, 1}: online argmax 1 -> 30 (max: 30).
    # Double-Q: y0 = 1 + 0.5 * 80 = 41, delta 35; max: y0 = 46, delta 40; the terminal step: delta -5.
    loss, mean_td = alg.learn(**hand_batch())
    assert (loss, mean_td) == pytest.approx(expected)


# -- the mixer ---------------------------------------------------------------------------------------------

def _mixer_gradients(Q, mixer, agent_qs, states):
    if Q.name == "torch":
        import torch

        qs = torch.tensor(agent_qs, requires_grad=True)
        mixer(qs, torch.tensor(states)).sum().backward()
        return qs.grad.numpy()
    import paddle

    qs = paddle.to_tensor(agent_qs, stop_gradient=False)
    mixer(qs, paddle.to_tensor(states)).sum().backward()
    return qs.grad.numpy()


def test_reference_mixer_is_monotonic(Q):
    rng = np.random.default_rng(0)
    Q.seed(0)
    mixer = Q.QMixer(n_agents=3, state_dim=5)
    agent_qs = rng.normal(scale=10.0, size=(64, 7, 3)).astype(np.float32)
    states = rng.normal(scale=3.0, size=(64, 7, 5)).astype(np.float32)
    grads = _mixer_gradients(Q, mixer, agent_qs, states)  # [B, T, n]: dQ_tot / dQ_i of each sample
    assert grads.shape == (64, 7, 3) and (grads >= 0).all() and (grads > 0).mean() > 0.5


def test_example_mixer_is_monotonic():
    torch = pytest.importorskip("torch")
    from test_examples_qmix import load_example

    train = load_example()
    rng = np.random.default_rng(1)
    torch.manual_seed(1)
    mixer = train.define_models("torch")[1](n_agents=2, state_dim=6, mixing_embed_dim=32, hypernet_embed_dim=64)
    for scale in (0.1, 1.0, 100.0):
        qs = torch.tensor(rng.normal(scale=scale, size=(16, 9, 2)).astype(np.float32), requires_grad=True)
        mixer(qs, torch.tensor(rng.normal(size=(16, 9, 6)).astype(np.float32))).sum().backward()
        assert (qs.grad >= 0).all() and (qs.grad > 0).float().mean() > 0.5


# -- learning, target sync, checkpoints --------------------------------------------------------------------

def build(Q, seed=0, **kwargs):
    Q.seed(seed)
    kwargs.setdefault("device", "cpu")
    return Q.QMIX(Q.RNNAgent(obs_dim=5, n_actions=4), Q.QMixer(n_agents=2, state_dim=7), **kwargs)


def test_learn_reduces_loss_on_a_fixed_batch(Q):
    alg = build(Q, lr=5e-3, clip_grad_norm=10.0)
    batch = episode_batch(np.random.default_rng(0))
    losses = [alg.learn(**batch)[0] for _ in range(60)]
    assert all(np.isfinite(losses)) and losses[-1] < 0.3 * losses[0]
    assert set(alg.last_info) == {"train/q_tot_mean", "train/target_mean", "train/grad_norm"}


def test_sync_target_copies_both_networks(Q):
    alg = build(Q)
    alg.learn(**episode_batch(np.random.default_rng(1)))
    pairs = ((alg.agent_model, alg.target_agent_model), (alg.qmixer_model, alg.target_qmixer_model))
    for online, target in pairs:
        w, t = online.get_weights(), target.get_weights()
        assert any(not np.array_equal(w[k], t[k]) for k in w)  # learn changed the online networks only
    alg.sync_target()
    for online, target in pairs:
        w, t = online.get_weights(), target.get_weights()
        assert w.keys() == t.keys() and all(np.array_equal(w[k], t[k]) for k in w)


def test_save_restore_resumes_exactly(Q, tmp_path):
    rng = np.random.default_rng(2)
    batches = [episode_batch(rng) for _ in range(3)]
    alg = build(Q, seed=0)
    alg._init_hidden_states(3)  # the acting state is not part of the checkpoint
    alg.learn(**batches[0])
    agent = Q.Agent(alg)
    agent.save(tmp_path / "qmix.ckpt")
    restored = Q.Agent(build(Q, seed=1))
    restored.restore(tmp_path / "qmix.ckpt")
    for key, weights in alg.get_all_weights().items():
        other = restored.alg.get_all_weights()[key]
        assert all(np.array_equal(weights[k], other[k]) for k in weights)
    # the optimizer state came along: the next updates are the same
    for batch in batches[1:]:
        assert restored.alg.learn(**batch) == pytest.approx(alg.learn(**batch), rel=1e-5)


def test_predict_local_q_and_parl_hidden_state(Q):
    alg = build(Q)
    alg._init_hidden_states(3)
    assert tuple(alg.hidden_states.shape) == (3, 2, 16) and float(abs(alg.hidden_states).sum()) == 0.0
    obs = np.random.default_rng(3).normal(size=(6, 5)).astype(np.float32)
    q, h = alg.predict_local_q(Q.tensor(obs), alg.hidden_states)
    assert tuple(q.shape) == (6, 4) and tuple(h.shape) == (6, 16)
    # one step of the batched episodes equals each agent's own step
    q1, _ = alg.predict_local_q(Q.tensor(obs[2:4]), alg.hidden_states[1])
    np.testing.assert_allclose(Q.numpy(q)[2:4], Q.numpy(q1), rtol=1e-5, atol=1e-6)


def test_registry_resolves_both_backends():
    import parl_algorithms

    for backend in BACKENDS:
        pytest.importorskip(backend)
        cls = parl_algorithms.load_algorithm(backend, "QMIX")
        assert cls.__module__ == f"parl_algorithms.{backend}.qmix"


# -- bad input ---------------------------------------------------------------------------------------------

def _edit(**changes):
    def apply(batch):
        for key, fn in changes.items():
            batch[key] = fn(batch[key])
        return batch
    return apply


def _set(key, index, value):
    def fn(array):
        array = array.copy()
        array[index] = value
        return array
    return _edit(**{key: fn})


BAD_BATCHES = {
    "no available actions": (_edit(available_actions_batch=lambda a: None), "available_actions_batch is None"),
    "no filled": (_edit(filled_batch=lambda a: None), "filled_batch is None"),
    "filled with a hole": (_set("filled_batch", (1, slice(2, 4)), 1.0), r"not of the form 0\.\.\.0 1\.\.\.1"),
    "filled not 0/1": (_set("filled_batch", (0, 0), 0.5), "0 / 1 flags"),
    "all padding": (_edit(filled_batch=lambda a: np.ones_like(a)), "no real transition"),
    "real step after terminal": (_set("terminated_batch", (1, 0), 1.0), "must be padding"),
    "filled shape": (_edit(filled_batch=lambda a: a[:, :-1]), r"\[B, T, \.\.\.\]"),
    "filled [B, T]": (_edit(filled_batch=lambda a: a[..., 0]), r"filled_batch must be \[B, T, 1\]"),
    "available actions shape": (_edit(available_actions_batch=lambda a: a[:, :, :1]), "agent counts differ"),
    "obs agents": (_edit(obs_batch=lambda a: np.concatenate([a, a], axis=2)), "agent counts differ"),
    "actions agents": (_edit(actions_batch=lambda a: a[:, :, :1]), "agent counts differ"),
    "unavailable action": (_set("available_actions_batch", (1, 1, 0, slice(None)), [1, 0, 0, 0]), None),
    "no action available": (_set("available_actions_batch", (1, 1, 1, slice(None)), 0.0), "no available action"),
    "action out of range": (_set("actions_batch", (1, 0, 0), 7), r"outside \[0, 4\)"),
    "continuous actions": (_edit(actions_batch=lambda a: a.astype(np.float32) + 0.25), "MADDPG.*MAPPO"),
    "continuous action vectors": (_edit(actions_batch=lambda a: np.zeros(a.shape + (2,), np.float32)),
                                  "MADDPG.*MAPPO"),
    "one step": (_edit(**{k: (lambda a: a[:, :1]) for k in ("state_batch", "actions_batch", "reward_batch",
                                                              "terminated_batch", "obs_batch",
                                                              "available_actions_batch", "filled_batch")}),
                 "T >= 2"),
}


@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_bad_batches_raise_naming_the_fix(Q, case):
    alg = build(Q)
    edit, message = BAD_BATCHES[case]
    batch = episode_batch(np.random.default_rng(4), steps=6)
    batch["filled_batch"][1] = 0.0  # episode 1: 6 real steps, truncated (no padding)
    batch["terminated_batch"][1] = 0.0
    batch["actions_batch"][1] = 0
    batch["available_actions_batch"][1, :, :, 0] = 1.0
    if case == "unavailable action":
        batch["actions_batch"][1, 1, 0] = 2
        message = r"actions_batch\[1, 1, 0\] = 2 is unavailable"
    batch = edit(batch)
    with pytest.raises(ValueError, match=message):
        alg.learn(**batch)


def test_bad_models_and_hyperparameters(Q):
    agent = Q.RNNAgent(5, 4)
    mixer = Q.QMixer(2, 7)
    no_n_agents = copy.deepcopy(mixer)
    del no_n_agents.n_agents
    with pytest.raises(ValueError, match="n_agents"):
        Q.QMIX(agent, no_n_agents)
    with pytest.raises(ValueError, match="init_hidden"):
        Q.QMIX(Q.QMixer(2, 7), mixer)
    with pytest.raises(ValueError, match="gamma"):
        Q.QMIX(agent, mixer, True, 1.5)
    with pytest.raises(ValueError, match="clip_grad_norm"):
        Q.QMIX(agent, mixer, clip_grad_norm=-1.0)
    with pytest.raises(TypeError, match="parl.Model"):
        Q.QMIX(object(), mixer)
    alg = Q.QMIX(agent, Q.QMixer(3, 7), device="cpu")
    batch = episode_batch(np.random.default_rng(5))
    with pytest.raises(ValueError, match=r"qmixer_model.n_agents: 3, actions_batch: 2"):
        alg.learn(**batch)
    alg = Q.QMIX(Q.RNNAgent(5, 3), Q.QMixer(2, 7), device="cpu")
    with pytest.raises(ValueError, match="returns 3 Q values per agent but available_actions_batch has n_actions=4"):
        alg.learn(**batch)


def test_parl_positional_arguments(Q):
    # PARL's train.py: QMIX(agent_model, qmixer_model, double_q, gamma, lr, clip_grad_norm)
    alg = Q.QMIX(Q.RNNAgent(5, 4), Q.QMixer(2, 7), False, 0.9, 0.001, 10)
    assert (alg.double_q, alg.gamma, alg.lr, alg.clip_grad_norm, alg.n_agents) == (False, 0.9, 0.001, 10.0, 2)


# -- torch vs paddle: the same update ----------------------------------------------------------------------

def _to_paddle_weights(weights):
    return {k: (v.T if v.ndim == 2 and k.endswith("weight") else v) for k, v in weights.items()}


@pytest.mark.parametrize("kwargs", [{}, {"double_q": False}, {"clip_grad_norm": 0.5}])
def test_torch_and_paddle_same_updates(kwargs):
    pytest.importorskip("torch")
    pytest.importorskip("paddle")
    T, P = qmix_models("torch"), qmix_models("paddle")
    torch_alg = build(T, seed=0, lr=1e-3, **kwargs)
    paddle_alg = build(P, seed=0, lr=1e-3, **kwargs)
    for name in ("agent_model", "qmixer_model", "target_agent_model", "target_qmixer_model"):
        getattr(paddle_alg, name).set_weights(_to_paddle_weights(getattr(torch_alg, name).get_weights()))
    rng = np.random.default_rng(6)
    for step in range(4):
        batch = episode_batch(rng)
        torch_out, paddle_out = torch_alg.learn(**batch), paddle_alg.learn(**batch)
        np.testing.assert_allclose(paddle_out, torch_out, rtol=2e-4, atol=1e-5)
        if step == 1:
            torch_alg.sync_target()
            paddle_alg.sync_target()
    for name in ("agent_model", "qmixer_model", "target_agent_model"):
        expected = _to_paddle_weights(getattr(torch_alg, name).get_weights())
        got = getattr(paddle_alg, name).get_weights()
        for key, value in expected.items():
            np.testing.assert_allclose(got[key], value, rtol=1e-3, atol=2e-5, err_msg=f"{name}.{key}")


def coordination_batch(rng, episodes=128):
    """One-step episodes of a 2-agent coordination game: the state s (one-hot, also each agent's observation with
    its id) names the action both must take; team reward 1 only if both take action s. Actions uniform at random;
    step 1 holds the final observation (terminal: padding, filled = 1)."""
    s = rng.integers(0, 2, episodes)
    actions = rng.integers(0, 3, (episodes, 2, 2))
    state = np.zeros((episodes, 2, 2), np.float32)
    state[np.arange(episodes), 0, s] = 1.0
    obs = np.concatenate([np.repeat(state[:, :, None], 2, axis=2),
                          np.broadcast_to(np.eye(2, dtype=np.float32), (episodes, 2, 2, 2))], axis=-1)
    reward = np.zeros((episodes, 2, 1), np.float32)
    reward[:, 0, 0] = (actions[:, 0, 0] == s) & (actions[:, 0, 1] == s)
    return dict(state_batch=state, actions_batch=actions, reward_batch=reward,
                terminated_batch=np.float32([[1], [0]])[None].repeat(episodes, 0), obs_batch=obs,
                available_actions_batch=np.ones((episodes, 2, 2, 3), np.float32),
                filled_batch=np.float32([[0], [1]])[None].repeat(episodes, 0))


def test_learns_a_coordination_game(Q):
    Q.seed(0)
    alg = Q.QMIX(Q.RNNAgent(obs_dim=4, n_actions=3), Q.QMixer(n_agents=2, state_dim=2), lr=3e-3, device="cpu")
    rng = np.random.default_rng(7)
    for step in range(300):
        alg.learn(**coordination_batch(rng, 64))
        if step % 50 == 49:
            alg.sync_target()
    # greedy actions of both agents in both states: the coordinated one, s
    obs = np.float32([[1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1]])  # (s, agent) = (0,0) (0,1) (1,0) (1,1)
    alg._init_hidden_states(2)
    q, _ = alg.predict_local_q(Q.tensor(obs), alg.hidden_states)
    assert Q.numpy(q).argmax(-1).tolist() == [0, 0, 1, 1]
    # and Q_tot fits the game: the TD loss of fresh episodes (target = the reward: one-step episodes) is small
    loss, _ = alg.learn(**coordination_batch(rng, 256))
    assert loss < 0.05
