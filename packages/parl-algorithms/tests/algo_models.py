"""Small models satisfying each algorithm's model-method contract, built for either backend.

``models("torch")`` / ``models("paddle")`` return the same architectures (same layer names and sizes) on
each framework, so a test body runs on both and the equivalence tests can copy weights across.
"""

import functools
import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

OBS_DIM, NUM_ACTIONS, ACT_DIM = 4, 3, 2
DT_OBS_DIM = 3
BACKENDS = ("torch", "paddle")


def _ops(backend):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (pip install 'parl-algorithms[{backend}]')")
    if backend == "torch":
        import torch

        import parl_algorithms.torch as algs
        from parl_core.torch import Agent, Model

        nn = torch.nn
        return SimpleNamespace(
            name="torch", Model=Model, Agent=Agent, algs=algs, nn=nn, Tanh=nn.Tanh,
            cat=lambda xs: torch.cat(xs, -1), chunk2=lambda x: x.chunk(2, dim=-1),
            clip=lambda x, lo, hi: x.clamp(lo, hi), tanh=torch.tanh, softmax=lambda x: torch.softmax(x, -1),
            zeros_param=lambda layer, n: nn.Parameter(torch.zeros(n)), seed=torch.manual_seed,
            numpy=lambda t: t.detach().cpu().numpy())
    import paddle

    import parl_algorithms.paddle as algs
    from parl_core.paddle import Agent, Model

    nn = paddle.nn
    return SimpleNamespace(
        name="paddle", Model=Model, Agent=Agent, algs=algs, nn=nn, Tanh=nn.Tanh,
        cat=lambda xs: paddle.concat(xs, -1), chunk2=lambda x: paddle.chunk(x, 2, axis=-1),
        clip=lambda x, lo, hi: paddle.clip(x, lo, hi), tanh=paddle.tanh,
        softmax=lambda x: paddle.nn.functional.softmax(x, -1),
        zeros_param=lambda layer, n: layer.create_parameter([n], default_initializer=nn.initializer.Constant(0.0)),
        seed=paddle.seed, numpy=lambda t: t.numpy())


@functools.cache
def models(backend):
    """Namespace of the test models on ``backend`` plus its ``Agent``, algorithms (``algs``) and ops."""
    B = _ops(backend)

    def mlp(inp, out, hidden=16):
        return B.nn.Sequential(B.nn.Linear(inp, hidden), B.Tanh(), B.nn.Linear(hidden, out))

    class QModel(B.Model):
        def __init__(self):
            super().__init__()
            self.net = mlp(OBS_DIM, NUM_ACTIONS)

        def forward(self, obs):
            return self.net(obs)

    class PGModel(QModel):
        def forward(self, obs):
            return B.softmax(self.net(obs))

    class DiscreteACModel(B.Model):
        def __init__(self):
            super().__init__()
            self.pi = mlp(OBS_DIM, NUM_ACTIONS)
            self.v = mlp(OBS_DIM, 1)

        def policy(self, obs):
            return self.pi(obs)

        def value(self, obs):
            return self.v(obs)

    class GaussianACModel(B.Model):
        def __init__(self):
            super().__init__()
            self.pi = mlp(OBS_DIM, ACT_DIM)
            self.log_std = B.zeros_param(self, ACT_DIM)
            self.v = mlp(OBS_DIM, 1)

        def policy(self, obs):
            return self.pi(obs), self.log_std

        def value(self, obs):
            return self.v(obs)

    class PPOGaussianModel(GaussianACModel):
        """PPO: PARL's continuous contract is ``(mean, std)``, the std as ``exp(log_std)``."""

        def policy(self, obs):
            return self.pi(obs), self.log_std.exp()

    class DeterministicACModel(B.Model):
        """DDPG: one critic."""

        def __init__(self):
            super().__init__()
            self.actor = mlp(OBS_DIM, ACT_DIM)
            self.critic = mlp(OBS_DIM + ACT_DIM, 1)

        def policy(self, obs):
            return B.tanh(self.actor(obs))

        def value(self, obs, action):
            return self.critic(B.cat([obs, action]))

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return self.critic.parameters()

    class TwinCriticModel(B.Model):
        """TD3: deterministic actor, twin critics, Q1."""

        def __init__(self):
            super().__init__()
            self.actor = mlp(OBS_DIM, ACT_DIM)
            self.q1 = mlp(OBS_DIM + ACT_DIM, 1)
            self.q2 = mlp(OBS_DIM + ACT_DIM, 1)

        def policy(self, obs):
            return B.tanh(self.actor(obs))

        def value(self, obs, action):
            x = B.cat([obs, action])
            return self.q1(x), self.q2(x)

        def Q1(self, obs, action):  # noqa: N802 (PARL's name)
            return self.q1(B.cat([obs, action]))

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return list(self.q1.parameters()) + list(self.q2.parameters())

    class SACModel(TwinCriticModel):
        """SAC / CQL: Gaussian actor (mean, log_std), twin critics."""

        def __init__(self):
            super().__init__()
            self.actor = mlp(OBS_DIM, 2 * ACT_DIM)

        def policy(self, obs):
            mean, log_std = B.chunk2(self.actor(obs))
            return mean, B.clip(log_std, -5.0, 2.0)

    class IQLModel(B.Model):
        """IQL: Gaussian policy (mean, log_std), twin critics ``qvalue``, a state value ``value``."""

        def __init__(self):
            super().__init__()
            self.actor = mlp(OBS_DIM, 2 * ACT_DIM)
            self.q1 = mlp(OBS_DIM + ACT_DIM, 1)
            self.q2 = mlp(OBS_DIM + ACT_DIM, 1)
            self.v = mlp(OBS_DIM, 1)

        def policy(self, obs):
            mean, log_std = B.chunk2(self.actor(obs))
            return mean, B.clip(log_std, -5.0, 2.0)

        def qvalue(self, obs, action):
            x = B.cat([obs, action])
            return self.q1(x), self.q2(x)

        def value(self, obs):
            return self.v(obs)

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return list(self.q1.parameters()) + list(self.q2.parameters())

        def get_value_params(self):
            return self.v.parameters()

    class DTStepModel(B.Model):
        """DecisionTransformer's model contract without the transformer: action = tanh(W s + v R), per step."""

        def __init__(self):
            super().__init__()
            self.fc = B.nn.Linear(DT_OBS_DIM + 1, ACT_DIM)

        def forward(self, states, actions, rewards, returns_to_go, timesteps, attention_mask=None):
            return None, B.tanh(self.fc(B.cat([states, returns_to_go]))), None

        def get_action(self, states, actions, rewards, returns_to_go, timesteps):
            return self(states, actions, rewards, returns_to_go, timesteps)[1][:, -1]

    return SimpleNamespace(ops=B, Agent=B.Agent, algs=B.algs, QModel=QModel, PGModel=PGModel, IQLModel=IQLModel,
                           DTStepModel=DTStepModel,
                           DiscreteACModel=DiscreteACModel, GaussianACModel=GaussianACModel,
                           PPOGaussianModel=PPOGaussianModel,
                           DeterministicACModel=DeterministicACModel, TwinCriticModel=TwinCriticModel,
                           SACModel=SACModel)


def transition(rng, discrete, batch, action_bound=1.0):
    """A replay batch ``(obs, action, reward [B, 1], next_obs, terminal [B, 1])`` as numpy."""
    action = (rng.integers(0, NUM_ACTIONS, size=(batch, 1)) if discrete
              else rng.uniform(-action_bound, action_bound, (batch, ACT_DIM)))
    return (rng.normal(size=(batch, OBS_DIM)).astype(np.float32), action.astype(np.int64 if discrete else np.float32),
            rng.normal(size=(batch, 1)).astype(np.float32), rng.normal(size=(batch, OBS_DIM)).astype(np.float32),
            (rng.random((batch, 1)) < 0.2).astype(np.float32))


def ppo_batch(rng, discrete, batch, logprob_shift=-1.0):
    """A PPO minibatch ``[obs, action, value, return, logprob, adv]`` as numpy."""
    action = (rng.integers(0, NUM_ACTIONS, size=batch) if discrete
              else rng.normal(size=(batch, ACT_DIM)).astype(np.float32))
    f = lambda: rng.normal(size=batch).astype(np.float32)  # noqa: E731
    return [rng.normal(size=(batch, OBS_DIM)).astype(np.float32), action, f(), f(), f() + logprob_shift, f()]


def a2c(M, model=None, lr=1e-2):
    """PARL's two A2C constructors: torch ``A2C(model, config)``, paddle ``A2C(model, vf_loss_coeff)``."""
    model = M.DiscreteACModel() if model is None else model
    if M.ops.name == "torch":
        return M.algs.A2C(model, {"vf_loss_coeff": 0.5, "learning_rate": lr})
    return M.algs.A2C(model, vf_loss_coeff=0.5, learning_rate=lr)


def paper_vtrace(behaviour, target, discounts, rewards, values, bootstrap, clip_rho, clip_pg_rho):
    """Eq. 1 as written: v_s = V(x_s) + sum_t (prod_{i<t} gamma_i c_i) rho_t delta_t, a double loop."""
    T, B = values.shape
    rhos = np.exp(target - behaviour)
    clipped = rhos if clip_rho is None else np.minimum(clip_rho, rhos)
    cs = np.minimum(1.0, rhos)
    next_values = np.concatenate([values[1:], bootstrap[None]], 0)
    vs = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            total, weight = 0.0, 1.0
            for t in range(s, T):
                total += weight * clipped[t, b] * (rewards[t, b] + discounts[t, b] * next_values[t, b] - values[t, b])
                weight *= discounts[t, b] * cs[t, b]
            vs[s, b] = values[s, b] + total
    next_vs = np.concatenate([vs[1:], bootstrap[None]], 0)
    pg_rhos = rhos if clip_pg_rho is None else np.minimum(clip_pg_rho, rhos)
    return vs, pg_rhos * (rewards + discounts * next_vs - values)


def dt_segments(rng, batch, length, obs_dim=DT_OBS_DIM, act_dim=ACT_DIM):
    """DecisionTransformer segments as numpy: (states, actions, rewards, dones, rtg [B, K + 1, 1], timesteps,
    attention_mask); the first segment is left-padded by two steps."""
    mask = np.ones((batch, length), np.float32)
    mask[0, :2] = 0
    return (rng.normal(size=(batch, length, obs_dim)).astype(np.float32),
            (rng.random((batch, length, act_dim)) - 0.5).astype(np.float32), np.zeros((batch, length, 1), np.float32),
            np.zeros((batch, length), np.float32), rng.normal(size=(batch, length + 1, 1)).astype(np.float32),
            np.tile(np.arange(length, dtype=np.int64), (batch, 1)), mask)
