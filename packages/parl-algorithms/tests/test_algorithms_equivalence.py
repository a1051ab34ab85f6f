"""Same update on both backends: our paddle and torch implementations of every algorithm, started from the
same weights and fed the same batches and the same random draws, end with the same weights and losses
within float32 rounding (the torch-vs-paddle counterpart of benchmarks/algorithms/equivalence_sb3.py).

The random draws (TD3's target smoothing noise, SAC / CQL's reparameterisation noise, CQL's uniform random
actions) come from one numpy stream, handed to whichever framework asks, in the order it asks; both
implementations must ask in the same order with the same shapes, which is part of what is checked.
"""

import numpy as np
import pytest
from algo_models import NUM_ACTIONS, OBS_DIM, a2c, dt_segments, models, ppo_batch, transition

torch = pytest.importorskip("torch")
paddle = pytest.importorskip("paddle")

B, STEPS = 16, 4


class NoiseStream:
    """Gaussian / uniform float32 draws from one numpy generator, served to torch and paddle alike."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def normal(self, shape):
        return self.rng.normal(size=tuple(int(s) for s in shape)).astype(np.float32)

    def uniform(self, n, d):
        return self.rng.uniform(-1.0, 1.0, size=(n, d)).astype(np.float32)


def _shape(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else tuple(size)


def patch_noise(monkeypatch, backend, stream, alg):
    """Route the algorithm's random draws to ``stream``."""
    if backend == "torch":
        monkeypatch.setattr(torch, "randn", lambda *size, **kw: torch.as_tensor(stream.normal(_shape(size))))
        monkeypatch.setattr(torch, "randn_like", lambda t, **kw: torch.as_tensor(stream.normal(t.shape)))
        as_tensor = torch.as_tensor
    else:
        monkeypatch.setattr(paddle, "randn", lambda shape, dtype=None, name=None: paddle.to_tensor(
            stream.normal(shape)))
        as_tensor = paddle.to_tensor
    if hasattr(alg, "_random_actions"):
        monkeypatch.setattr(alg, "_random_actions", lambda n, d, like: as_tensor(stream.uniform(n, d)))


def copy_torch_weights(torch_model, paddle_model):
    """torch -> paddle, same names; ``Linear`` weights are stored transposed in paddle ([in, out])."""
    weights = {}
    for name, value in torch_model.get_weights().items():
        weights[name] = value.T if value.ndim == 2 and name.endswith("weight") else value
    paddle_model.set_weights(weights)


def _a2c(M, model):
    return a2c(M, model)


def _transition(rng, discrete):
    return transition(rng, discrete, B, action_bound=0.99)


def _ppo(rng, discrete):
    return ppo_batch(rng, discrete, B, logprob_shift=-1.5)


def _a3c_batch(rng):
    """(obs, actions, advantages, target_values, learning_rate, entropy_coeff)."""
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=B).astype(np.float32), rng.normal(size=B).astype(np.float32), 1e-2, -0.01)


IMPALA_T = 4  # B = 16 rows: 4 unrolls of 4 steps, env-major (PARL)


def _impala_batch(rng):
    """(obs, actions, behaviour_logits, rewards, dones, learning_rate, entropy_coeff)."""
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=(B, NUM_ACTIONS)).astype(np.float32), rng.normal(size=B).astype(np.float32),
            rng.random(B) < 0.2, 1e-2, -0.01)


def _impala(**kwargs):
    return lambda M, m: M.algs.IMPALA(m, sample_batch_steps=IMPALA_T, gamma=0.9, **kwargs)


OFF = dict(gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3)
# name -> (model class name, build the algorithm, a learn batch from a numpy Generator, learning rate)
CASES = {
    "PolicyGradient": ("PGModel", lambda M, m: M.algs.PolicyGradient(m, lr=1e-2),
                       lambda rng: (rng.normal(size=(B, OBS_DIM)).astype(np.float32),
                                    rng.integers(0, NUM_ACTIONS, size=B), rng.normal(size=B).astype(np.float32)), 1e-2),
    "DQN": ("QModel", lambda M, m: M.algs.DQN(m, gamma=0.99, lr=1e-2), lambda rng: _transition(rng, True), 1e-2),
    "DDQN": ("QModel", lambda M, m: M.algs.DDQN(m, gamma=0.99, lr=1e-2, loss_type="huber"),
             lambda rng: _transition(rng, True), 1e-2),
    "DQN-clipped": ("QModel", lambda M, m: M.algs.DQN(m, gamma=0.99, lr=1e-2, max_grad_norm=0.1),
                    lambda rng: _transition(rng, True), 1e-2),
    "A2C": ("DiscreteACModel", _a2c, lambda rng: (rng.normal(size=(B, OBS_DIM)).astype(np.float32),
                                                  rng.integers(0, NUM_ACTIONS, size=B),
                                                  rng.normal(size=B).astype(np.float32),
                                                  rng.normal(size=B).astype(np.float32)), 1e-2),
    "PPO-discrete": ("DiscreteACModel", lambda M, m: M.algs.PPO(m, initial_lr=1e-2), lambda rng: _ppo(rng, True),
                     1e-2),
    "PPO-continuous": ("PPOGaussianModel", lambda M, m: M.algs.PPO(m, initial_lr=1e-2, continuous_action=True),
                       lambda rng: _ppo(rng, False), 1e-2),
    "DDPG": ("DeterministicACModel", lambda M, m: M.algs.DDPG(m, **OFF), lambda rng: _transition(rng, False), 1e-3),
    "TD3": ("TwinCriticModel", lambda M, m: M.algs.TD3(m, **OFF), lambda rng: _transition(rng, False), 1e-3),
    "SAC": ("SACModel", lambda M, m: M.algs.SAC(m, alpha=0.2, **OFF), lambda rng: _transition(rng, False), 1e-3),
    "SAC-auto-alpha": ("SACModel", lambda M, m: M.algs.SAC(m, with_automatic_entropy_tuning=True, **OFF),
                       lambda rng: _transition(rng, False), 1e-3),
    "CQL": ("SACModel", lambda M, m: M.algs.CQL(m, policy_eval_start=2, num_random=3, **OFF),
            lambda rng: _transition(rng, False), 1e-3),
    "A3C": ("DiscreteACModel", lambda M, m: M.algs.A3C(m, vf_loss_coeff=0.5), _a3c_batch, 1e-2),
    "A3C-mean-clipped": ("DiscreteACModel", lambda M, m: M.algs.A3C(m, vf_loss_coeff=0.5, reduction="mean",
                                                                     max_grad_norm=0.1), _a3c_batch, 1e-2),
    "IMPALA": ("DiscreteACModel", _impala(), _impala_batch, 1e-2),
    "IMPALA-clipped-rho": ("DiscreteACModel", _impala(clip_rho_threshold=0.5, clip_pg_rho_threshold=2.0,
                                                      max_grad_norm=0.5), _impala_batch, 1e-2),
    "OAC": ("SACModel", lambda M, m: M.algs.OAC(m, alpha=0.2, beta=4.66, delta=23.53, **OFF),
            lambda rng: _transition(rng, False), 1e-3),
    "IQL": ("IQLModel", lambda M, m: M.algs.IQL(m, max_steps=2 * STEPS, lr=1e-3), lambda rng: _transition(rng, False),
            1e-3),
    # weight_decay 0.5: AdamW's decoupled decay moves weights by lr * 0.5 * w per step, far above the tolerance
    "DecisionTransformer": ("DTStepModel", lambda M, m: M.algs.DecisionTransformer(
        m, learning_rate=1e-2, warmup_steps=2, weight_decay=0.5), lambda rng: dt_segments(rng, 4, 5), 1e-2),
    "CQL-lagrange-v2": ("SACModel", lambda M, m: M.algs.CQL(m, with_lagrange=True, min_q_version=2, num_random=3,
                                                             **OFF),
                        lambda rng: _transition(rng, False), 1e-3),
}


# A3C: (total, pi, vf, entropy); IMPALA: (that, kl); IQL: (q, v, pi); DecisionTransformer: the loss
SAME_RETURNS = {"A3C", "IMPALA", "IQL", "DecisionTransformer"}


def _floats(out):
    """The numbers of a learn output, nested tuples flattened (IMPALA: ``((total, pi, vf, entropy), kl)``)."""
    if isinstance(out, (tuple, list)):
        return [x for item in out for x in _floats(item)]
    return [float(out)]


def _run(backend, name, model, monkeypatch):
    """Build the algorithm on ``model`` and run STEPS learn calls; return (losses, weights, alpha)."""
    M = models(backend)
    _, build, batch, _ = CASES[name]
    alg = build(M, model)
    agent = M.Agent(alg)
    with monkeypatch.context() as patch:
        patch_noise(patch, backend, NoiseStream(1), alg)
        rng = np.random.default_rng(0)
        losses = []
        for _ in range(STEPS):
            losses.append(_floats(agent.learn(*batch(rng))))
    return losses, agent.alg.get_all_weights(), getattr(alg, "alpha", None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_paddle_update_equals_torch_update(name, monkeypatch):
    model_cls, _, _, lr = CASES[name]
    T, P = models("torch"), models("paddle")
    T.ops.seed(0)
    torch_model, paddle_model = getattr(T, model_cls)(), getattr(P, model_cls)()
    copy_torch_weights(torch_model, paddle_model)
    initial = torch_model.get_weights()
    t_losses, t_weights, t_alpha = _run("torch", name, torch_model, monkeypatch)
    p_losses, p_weights, p_alpha = _run("paddle", name, paddle_model, monkeypatch)

    # PARL's returns differ per backend (paddle TD3: critic loss only; paddle CQL: 4 values): compare
    # the critic / main loss, which both return first; every value where both return the same count
    np.testing.assert_allclose([x[0] for x in p_losses], [x[0] for x in t_losses], rtol=1e-4, atol=1e-5)
    if name.split("-")[0] in SAME_RETURNS:
        np.testing.assert_allclose(p_losses, t_losses, rtol=1e-4, atol=1e-5)
    assert set(p_weights) == set(t_weights)
    for key, t_model in t_weights.items():
        for param, t_value in t_model.items():
            p_value = p_weights[key][param]
            p_value = p_value.T if p_value.ndim == 2 and param.endswith("weight") else p_value
            # an Adam step moves a weight by about lr: float rounding shows up orders of magnitude below it
            np.testing.assert_allclose(p_value, t_value, rtol=0, atol=lr * 1e-2, err_msg=f"{name} {key}.{param}")
    if t_alpha is not None:
        assert p_alpha == pytest.approx(t_alpha, rel=1e-5)
    moved = max(float(np.abs(t_weights["model"][k] - v).max()) for k, v in initial.items())
    assert moved > 10 * lr * 1e-2  # the runs moved the weights well beyond the tolerance: updates are compared


def test_oac_exploration_action_paddle_equals_torch(monkeypatch):
    T, P = models("torch"), models("paddle")
    T.ops.seed(0)
    torch_model, paddle_model = T.SACModel(), P.SACModel()
    copy_torch_weights(torch_model, paddle_model)
    obs = np.random.default_rng(0).normal(size=(B, OBS_DIM)).astype(np.float32)
    actions = {}
    for backend, model in (("torch", torch_model), ("paddle", paddle_model)):
        M = models(backend)
        alg = M.algs.OAC(model, alpha=0.2, beta=4.66, delta=23.53, **OFF)
        with monkeypatch.context() as patch:
            patch_noise(patch, backend, NoiseStream(3), alg)
            actions[backend] = M.ops.numpy(alg.get_optimistic_exploration_action(obs))
    greedy = np.tanh(T.ops.numpy(torch_model.policy(torch.as_tensor(obs))[0]))
    assert np.abs(actions["torch"] - greedy).max() > 0.1  # the shift and the noise moved the action
    np.testing.assert_allclose(actions["paddle"], actions["torch"], rtol=1e-5, atol=1e-5)
