"""Bad models, hyperparameters, shapes and action-space mismatches raise errors that name the fix."""

import numpy as np
import pytest
import torch
from algo_models import (
    ACT_DIM,
    NUM_ACTIONS,
    OBS_DIM,
    DiscreteACModel,
    GaussianACModel,
    QModel,
    SACModel,
    TwinCriticModel,
)
from torch import nn

import parl_algorithms as algs
from parl_core.torch import Model


class Empty(Model):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(OBS_DIM, 2)


class NoActorParams(SACModel):
    get_actor_params = None


@pytest.mark.parametrize("build, missing", [
    (lambda: algs.DQN(Empty(), gamma=0.9, lr=1e-3), "forward"),
    (lambda: algs.DDQN(Empty(), gamma=0.9, lr=1e-3), "forward"),
    (lambda: algs.PPO(Empty()), "value"),
    (lambda: algs.A2C(Empty()), "value"),
    (lambda: algs.DDPG(Empty(), gamma=0.9, tau=0.01, actor_lr=1e-3, critic_lr=1e-3), "value"),
    (lambda: algs.TD3(SACModel.__new__(Empty), 0.9, 0.01, 1e-3, 1e-3), "value"),
    (lambda: algs.SAC(NoActorParams(), 0.9, 0.01, 0.2, 1e-3, 1e-3), "get_actor_params"),
    (lambda: algs.CQL(NoActorParams(), 0.9, 0.01, 1e-3, 1e-3), "get_actor_params"),
])
def test_missing_model_method_is_named(build, missing):
    with pytest.raises(ValueError, match=missing):
        build()


def test_td3_needs_q1():
    class NoQ1(TwinCriticModel):
        Q1 = None

    with pytest.raises(ValueError, match="Q1"):
        algs.TD3(NoQ1(), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3)


def test_not_a_model():
    with pytest.raises(TypeError, match="parl.Model"):
        algs.DQN(nn.Linear(2, 2), gamma=0.9, lr=1e-3)


@pytest.mark.parametrize("build, name", [
    (lambda: algs.DQN(QModel(), lr=1e-3), "gamma"),
    (lambda: algs.DQN(QModel(), gamma=1.5, lr=1e-3), "gamma"),
    (lambda: algs.DQN(QModel(), gamma=0.9), "lr"),
    (lambda: algs.DQN(QModel(), gamma=0.9, lr=1e-3, loss_type="l1"), "loss_type"),
    (lambda: algs.SAC(SACModel(), gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3), "alpha"),
    (lambda: algs.DDPG(TwinCriticModel(), gamma=0.99, actor_lr=1e-3, critic_lr=1e-3), "tau"),
    (lambda: algs.TD3(TwinCriticModel(), 0.99, 0.005, 1e-3, 1e-3, policy_freq=0), "policy_freq"),
    (lambda: algs.PPO(DiscreteACModel(), clip_param=-0.1), "clip_param"),
    (lambda: algs.CQL(SACModel(), 0.99, 0.005, 1e-3, 1e-3, min_q_version=1), "min_q_version"),
])
def test_bad_hyperparameters(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_discrete_algorithm_given_continuous_actions():
    obs = torch.zeros(4, OBS_DIM)
    dqn = algs.DQN(QModel(), gamma=0.9, lr=1e-3)
    with pytest.raises(ValueError, match="continuous"):
        dqn.learn(obs, torch.full((4, 1), 0.3), torch.zeros(4), obs, torch.zeros(4))
    with pytest.raises(ValueError, match="continuous"):
        dqn.learn(obs, torch.zeros(4, ACT_DIM, dtype=torch.long), torch.zeros(4), obs, torch.zeros(4))
    ppo = algs.PPO(DiscreteACModel())
    with pytest.raises(ValueError, match="continuous"):
        ppo.learn(obs, torch.randn(4, ACT_DIM), *[torch.zeros(4)] * 4)
    with pytest.raises(ValueError, match="continuous_action=True"):
        algs.PPO(GaussianACModel()).sample(obs)


def test_continuous_algorithm_given_discrete_actions():
    obs = torch.zeros(4, OBS_DIM)
    sac = algs.SAC(SACModel(), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3)
    with pytest.raises(ValueError, match="Discrete"):
        sac.learn(obs, torch.zeros(4, dtype=torch.long), torch.zeros(4), obs, torch.zeros(4))
    ppo = algs.PPO(GaussianACModel(), continuous_action=True)
    with pytest.raises(ValueError, match="Discrete"):
        ppo.learn(obs, torch.zeros(4, dtype=torch.long), *[torch.zeros(4)] * 4)
    with pytest.raises(ValueError, match="continuous_action=False"):
        algs.PPO(DiscreteACModel(), continuous_action=True).sample(obs)


def test_wrong_shapes():
    dqn = algs.DQN(QModel(), gamma=0.9, lr=1e-3)
    obs = torch.zeros(4, OBS_DIM)
    assert dqn.predict(torch.zeros(OBS_DIM)).shape == (NUM_ACTIONS,)  # one unbatched obs, as PARL accepts
    with pytest.raises(ValueError, match="reward"):
        dqn.learn(obs, torch.zeros(4, dtype=torch.long), torch.zeros(3), obs, torch.zeros(4))
    with pytest.raises(ValueError, match="next_obs"):
        dqn.learn(obs, torch.zeros(4, dtype=torch.long), torch.zeros(4), torch.zeros(4, 5), torch.zeros(4))
    with pytest.raises(ValueError, match=rf"\[0, {NUM_ACTIONS}\)"):
        dqn.learn(obs, torch.full((4,), NUM_ACTIONS), torch.zeros(4), obs, torch.zeros(4))
    with pytest.raises(ValueError, match=r"DQN.predict: the model rejected inputs of shapes \[\(4, 5\)\]"):
        dqn.predict(torch.zeros(4, OBS_DIM + 1))
    sac = algs.SAC(SACModel(), gamma=0.99, tau=0.005, alpha=0.2, actor_lr=1e-3, critic_lr=1e-3)
    with pytest.raises(ValueError, match="obs_shape"):
        sac.learn(torch.zeros(4, OBS_DIM + 2), torch.zeros(4, ACT_DIM), torch.zeros(4), torch.zeros(4, OBS_DIM + 2),
                  torch.zeros(4))
    with pytest.raises(ValueError, match="obs_shape"):  # wrong action size reaches the critic
        sac.learn(obs, torch.zeros(4, ACT_DIM + 1), torch.zeros(4), obs, torch.zeros(4))
    with pytest.raises(TypeError, match="numeric"):
        dqn.predict(np.array([["a"] * OBS_DIM]))
