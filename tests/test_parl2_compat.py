"""PARL 2.x code on torch runs unchanged: the original torch QuickStart's model and agent, verbatim
(only the gym -> gymnasium environment calls differ)."""

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import parl
from parl.algorithms import PolicyGradient
from parl.utils import logger


class CartpoleModel(parl.Model):
    def __init__(self, obs_dim, act_dim):
        super(CartpoleModel, self).__init__()  # noqa: UP008 - as written in PARL 2.x
        hid1_size = act_dim * 10
        self.fc1 = nn.Linear(obs_dim, hid1_size)
        self.fc2 = nn.Linear(hid1_size, act_dim)

    def forward(self, x):
        out = torch.tanh(self.fc1(x))
        prob = F.softmax(self.fc2(out), dim=-1)
        return prob


class CartpoleAgent(parl.Agent):
    def __init__(self, algorithm):
        super(CartpoleAgent, self).__init__(algorithm)  # noqa: UP008

    def sample(self, obs):
        obs = torch.tensor(obs, dtype=torch.float32)
        prob = self.alg.predict(obs)
        prob = prob.data.numpy()
        action = np.random.choice(len(prob), 1, p=prob)[0]
        return action

    def predict(self, obs):
        obs = torch.tensor(obs, dtype=torch.float32)
        prob = self.alg.predict(obs)
        action = int(prob.argmax())
        return action

    def learn(self, obs, action, reward):
        action = np.expand_dims(action, axis=-1)
        reward = np.expand_dims(reward, axis=-1)
        obs = torch.tensor(obs, dtype=torch.float32)
        action = torch.tensor(action, dtype=torch.int64)
        reward = torch.tensor(reward, dtype=torch.float32)
        loss = self.alg.learn(obs, action, reward)
        return loss.item()


def run_train_episode(agent, env):
    obs_list, action_list, reward_list = [], [], []
    obs, _ = env.reset()
    while True:
        obs_list.append(obs)
        action = agent.sample(obs)
        action_list.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        reward_list.append(reward)
        if terminated or truncated:
            break
    return obs_list, action_list, reward_list


def calc_reward_to_go(reward_list, gamma=1.0):
    for i in range(len(reward_list) - 2, -1, -1):
        reward_list[i] += gamma * reward_list[i + 1]
    return np.array(reward_list)


def test_parl2_quickstart_code_runs_unchanged(tmp_path):
    torch.manual_seed(0)
    np.random.seed(0)
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    model = CartpoleModel(obs_dim=4, act_dim=2)
    alg = PolicyGradient(model, lr=1e-3)
    agent = CartpoleAgent(alg)
    before = model.get_weights()["fc1.weight"].copy()
    for i in range(5):
        obs_list, action_list, reward_list = run_train_episode(agent, env)
        logger.info("Episode %d, Reward Sum %s.", i, sum(reward_list))
        loss = agent.learn(np.array(obs_list), np.array(action_list), calc_reward_to_go(reward_list))
        assert isinstance(loss, float) and np.isfinite(loss)
    assert not np.array_equal(model.get_weights()["fc1.weight"], before)  # it learned something
    assert agent.predict(np.zeros(4, dtype=np.float32)) in (0, 1)

    path = str(tmp_path / "model.ckpt")
    agent.save(path)
    fresh = CartpoleAgent(PolicyGradient(CartpoleModel(obs_dim=4, act_dim=2), lr=1e-3))
    fresh.restore(path)
    for name, value in model.get_weights().items():
        np.testing.assert_array_equal(fresh.alg.model.get_weights()[name], value)
