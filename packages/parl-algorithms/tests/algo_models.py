"""Small models satisfying each algorithm's model-method contract (shared by the tests)."""

import torch
from torch import nn

from parl_core.torch import Model

OBS_DIM, NUM_ACTIONS, ACT_DIM = 4, 3, 2


def mlp(inp, out, hidden=16):
    return nn.Sequential(nn.Linear(inp, hidden), nn.Tanh(), nn.Linear(hidden, out))


class QModel(Model):
    def __init__(self):
        super().__init__()
        self.net = mlp(OBS_DIM, NUM_ACTIONS)

    def forward(self, obs):
        return self.net(obs)


class DiscreteACModel(Model):
    def __init__(self):
        super().__init__()
        self.pi = mlp(OBS_DIM, NUM_ACTIONS)
        self.v = mlp(OBS_DIM, 1)

    def policy(self, obs):
        return self.pi(obs)

    def value(self, obs):
        return self.v(obs)


class GaussianACModel(Model):
    def __init__(self):
        super().__init__()
        self.pi = mlp(OBS_DIM, ACT_DIM)
        self.log_std = nn.Parameter(torch.zeros(ACT_DIM))
        self.v = mlp(OBS_DIM, 1)

    def policy(self, obs):
        return self.pi(obs), self.log_std

    def value(self, obs):
        return self.v(obs)


class DeterministicACModel(Model):
    """DDPG: one critic."""

    def __init__(self):
        super().__init__()
        self.actor = mlp(OBS_DIM, ACT_DIM)
        self.critic = mlp(OBS_DIM + ACT_DIM, 1)

    def policy(self, obs):
        return torch.tanh(self.actor(obs))

    def value(self, obs, action):
        return self.critic(torch.cat([obs, action], -1))

    def get_actor_params(self):
        return self.actor.parameters()

    def get_critic_params(self):
        return self.critic.parameters()


class TwinCriticModel(Model):
    """TD3: deterministic actor, twin critics, Q1."""

    def __init__(self):
        super().__init__()
        self.actor = mlp(OBS_DIM, ACT_DIM)
        self.q1 = mlp(OBS_DIM + ACT_DIM, 1)
        self.q2 = mlp(OBS_DIM + ACT_DIM, 1)

    def policy(self, obs):
        return torch.tanh(self.actor(obs))

    def value(self, obs, action):
        x = torch.cat([obs, action], -1)
        return self.q1(x), self.q2(x)

    def Q1(self, obs, action):  # noqa: N802 (PARL's name)
        return self.q1(torch.cat([obs, action], -1))

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
        mean, log_std = self.actor(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(-5.0, 2.0)
