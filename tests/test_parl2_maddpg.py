"""PARL 2.x's MADDPG code on torch runs unchanged against this project: PARL 2.2.1's ``benchmark/torch/maddpg``
model (``simple_model.py``), agent (``simple_agent.py``) and episode loop (``train.py``'s ``run_episode`` /
``run_evaluate_episodes``), reproduced verbatim below, driven on ``parl.env.multiagent_env.MAenv`` (mpe2)."""

from types import SimpleNamespace

import mpe2  # noqa: E402, F401 (parl-core[marl]; missing fails, never skips)
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import parl
from parl.algorithms import MADDPG
from parl.env.multiagent_env import MAenv
from parl.utils import ReplayMemory

# ---- PARL 2.2.1 benchmark/torch/maddpg/simple_model.py, verbatim ----------------------------------------


# Initialize Policy weights
def weights_init_(m):
    if isinstance(m, nn.Linear):
        torch.nn.init.xavier_uniform_(m.weight, gain=1)
        torch.nn.init.constant_(m.bias, 0)


class MAModel(parl.Model):
    def __init__(self,
                 obs_dim,
                 act_dim,
                 critic_in_dim,
                 continuous_actions=False):
        super(MAModel, self).__init__()  # noqa: UP008 - as written in PARL 2.x
        self.actor_model = ActorModel(obs_dim, act_dim, continuous_actions)
        self.critic_model = CriticModel(critic_in_dim)

    def policy(self, obs):
        return self.actor_model(obs)

    def value(self, obs, act):
        return self.critic_model(obs, act)

    def get_actor_params(self):
        return self.actor_model.parameters()

    def get_critic_params(self):
        return self.critic_model.parameters()


class ActorModel(parl.Model):
    def __init__(self, obs_dim, act_dim, continuous_actions=False):
        super(ActorModel, self).__init__()  # noqa: UP008
        self.continuous_actions = continuous_actions
        hid1_size = 64
        hid2_size = 64
        self.fc1 = nn.Linear(obs_dim, hid1_size)
        self.fc2 = nn.Linear(hid1_size, hid2_size)
        self.fc3 = nn.Linear(hid2_size, act_dim)
        if self.continuous_actions:
            std_hid_size = 64
            self.std_fc = nn.Linear(std_hid_size, act_dim)
        self.apply(weights_init_)

    def forward(self, obs):
        hid1 = F.relu(self.fc1(obs))
        hid2 = F.relu(self.fc2(hid1))
        means = self.fc3(hid2)
        if self.continuous_actions:
            act_std = self.std_fc(hid2)
            return (means, act_std)
        return means


class CriticModel(parl.Model):
    def __init__(self, critic_in_dim):
        super(CriticModel, self).__init__()  # noqa: UP008
        hid1_size = 64
        hid2_size = 64
        out_dim = 1
        self.fc1 = nn.Linear(critic_in_dim, hid1_size)
        self.fc2 = nn.Linear(hid1_size, hid2_size)
        self.fc3 = nn.Linear(hid2_size, out_dim)
        self.apply(weights_init_)

    def forward(self, obs_n, act_n):
        inputs = torch.cat(obs_n + act_n, dim=1)
        hid1 = F.relu(self.fc1(inputs))
        hid2 = F.relu(self.fc2(hid1))
        Q = self.fc3(hid2)  # noqa: N806
        Q = torch.squeeze(Q, dim=1)  # noqa: N806
        return Q


# ---- PARL 2.2.1 benchmark/torch/maddpg/simple_agent.py, verbatim (its asserts are PARL's) ---------------


class MAAgent(parl.Agent):
    def __init__(self,
                 algorithm,
                 agent_index=None,
                 obs_dim_n=None,
                 act_dim_n=None,
                 batch_size=None):
        assert isinstance(agent_index, int)
        assert isinstance(obs_dim_n, list)
        assert isinstance(act_dim_n, list)
        assert isinstance(batch_size, int)
        self.agent_index = agent_index
        self.obs_dim_n = obs_dim_n
        self.act_dim_n = act_dim_n
        self.batch_size = batch_size
        self.n = len(act_dim_n)

        self.memory_size = int(1e5)
        self.min_memory_size = batch_size * 25  # batch_size * args.max_episode_len
        self.rpm = ReplayMemory(
            max_size=self.memory_size,
            obs_dim=self.obs_dim_n[agent_index],
            act_dim=self.act_dim_n[agent_index])
        self.global_train_step = 0
        self.device = torch.device("cuda" if torch.cuda.
                                   is_available() else "cpu")

        super(MAAgent, self).__init__(algorithm)  # noqa: UP008

        # Attention: In the beginning, sync target model totally.
        self.alg.sync_target(decay=0)

    def predict(self, obs):
        """ predict action by model
        """
        obs = torch.FloatTensor(obs.reshape(1, -1)).to(self.device)
        act = self.alg.predict(obs)
        act_numpy = act.detach().cpu().numpy().flatten()
        return act_numpy

    def sample(self, obs, use_target_model=False):
        """ sample action by model or target_model
        """
        obs = torch.FloatTensor(obs.reshape(1, -1)).to(self.device)
        act = self.alg.sample(obs, use_target_model=use_target_model)
        act_numpy = act.detach().cpu().numpy().flatten()
        return act_numpy

    def learn(self, agents):
        """ sample batch, compute q_target and train
        """
        self.global_train_step += 1

        # only update parameter every 100 steps
        if self.global_train_step % 100 != 0:
            return 0.0

        if self.rpm.size() <= self.min_memory_size:
            return 0.0

        batch_obs_n = []
        batch_act_n = []
        batch_obs_next_n = []

        # sample batch
        rpm_sample_index = self.rpm.make_index(self.batch_size)
        for i in range(self.n):
            batch_obs, batch_act, _, batch_obs_next, _ \
                = agents[i].rpm.sample_batch_by_index(rpm_sample_index)
            batch_obs_n.append(batch_obs)
            batch_act_n.append(batch_act)
            batch_obs_next_n.append(batch_obs_next)
        _, _, batch_rew, _, batch_isOver = self.rpm.sample_batch_by_index(  # noqa: N806
            rpm_sample_index)
        batch_obs_n = [
            torch.FloatTensor(obs).to(self.device) for obs in batch_obs_n
        ]
        batch_act_n = [
            torch.FloatTensor(act).to(self.device) for act in batch_act_n
        ]
        batch_rew = torch.FloatTensor(batch_rew).to(self.device)
        batch_isOver = torch.FloatTensor(batch_isOver).to(self.device)  # noqa: N806

        # compute target q
        target_act_next_n = []
        batch_obs_next_n = [
            torch.FloatTensor(obs).to(self.device) for obs in batch_obs_next_n
        ]
        for i in range(self.n):
            target_act_next = agents[i].alg.sample(
                batch_obs_next_n[i], use_target_model=True)
            target_act_next = target_act_next.detach()
            target_act_next_n.append(target_act_next)
        target_q_next = self.alg.Q(
            batch_obs_next_n, target_act_next_n, use_target_model=True)
        target_q = batch_rew + self.alg.gamma * (
            1.0 - batch_isOver) * target_q_next.detach()

        # learn
        critic_cost = self.alg.learn(batch_obs_n, batch_act_n, target_q)
        critic_cost = critic_cost.cpu().detach().numpy()

        return critic_cost

    def add_experience(self, obs, act, reward, next_obs, terminal):
        self.rpm.append(obs, act, reward, next_obs, terminal)


# ---- PARL 2.2.1 benchmark/torch/maddpg/train.py: its constants and episode loops, verbatim --------------

CRITIC_LR = 0.01  # learning rate for the critic model
ACTOR_LR = 0.01  # learning rate of the actor model
GAMMA = 0.95  # reward discount factor
TAU = 0.01  # soft update
MAX_STEP_PER_EPISODE = 25  # maximum step per episode
args = SimpleNamespace(show=False, restore=False)  # train.py's argparse flags that the loops read


# Runs policy and returns episodes' rewards and steps for evaluation
def run_evaluate_episodes(env, agents, eval_episodes):
    eval_episode_rewards = []
    eval_episode_steps = []
    while len(eval_episode_rewards) < eval_episodes:
        obs_n = env.reset()
        done = False
        total_reward = 0
        steps = 0
        while not done and steps < MAX_STEP_PER_EPISODE:
            steps += 1
            action_n = [
                agent.predict(obs) for agent, obs in zip(agents, obs_n)  # noqa: B905
            ]
            obs_n, reward_n, done_n, _ = env.step(action_n)
            done = all(done_n)
            total_reward += sum(reward_n)

        eval_episode_rewards.append(total_reward)
        eval_episode_steps.append(steps)
    return eval_episode_rewards, eval_episode_steps


def run_episode(env, agents):
    obs_n = env.reset()
    done = False
    total_reward = 0
    agents_reward = [0 for _ in range(env.n)]
    steps = 0
    while not done and steps < MAX_STEP_PER_EPISODE:
        steps += 1
        action_n = [agent.sample(obs) for agent, obs in zip(agents, obs_n)]  # noqa: B905
        next_obs_n, reward_n, done_n, _ = env.step(action_n)
        done = all(done_n)

        # store experience
        for i, agent in enumerate(agents):
            agent.add_experience(obs_n[i], action_n[i], reward_n[i],
                                 next_obs_n[i], done_n[i])

        # compute reward of every agent
        obs_n = next_obs_n
        for i, reward in enumerate(reward_n):
            total_reward += reward
            agents_reward[i] += reward

        # show model effect without training
        if args.restore and args.show:
            continue

        # learn policy
        for i, agent in enumerate(agents):  # noqa: B007
            critic_loss = agent.learn(agents)  # noqa: F841

    return total_reward, agents_reward, steps


# ---- the test: train.py's main() wiring, with a batch of 8 so that learning starts after 8 episodes -------


def build(env, continuous_actions, batch_size=8):
    critic_in_dim = sum(env.obs_shape_n) + sum(env.act_shape_n)
    agents = []
    for i in range(env.n):
        model = MAModel(env.obs_shape_n[i], env.act_shape_n[i], critic_in_dim, continuous_actions)
        algorithm = MADDPG(model, agent_index=i, act_space=env.action_space, gamma=GAMMA, tau=TAU,
                           critic_lr=CRITIC_LR, actor_lr=ACTOR_LR)
        agents.append(MAAgent(algorithm, agent_index=i, obs_dim_n=env.obs_shape_n, act_dim_n=env.act_shape_n,
                              batch_size=batch_size))
    return agents


@pytest.mark.parametrize("continuous_actions", [False, True])
def test_parl2_maddpg_code_runs_unchanged(continuous_actions, tmp_path):
    torch.manual_seed(0)
    np.random.seed(0)
    env = MAenv("simple_spread", continuous_actions)
    env.seed(0)
    assert env.n == 3 and env.obs_shape_n == [18, 18, 18] and env.act_shape_n == [5, 5, 5]
    agents = build(env, continuous_actions)
    assert all(agent.alg.continuous_actions is continuous_actions for agent in agents)
    initial = [agent.alg.model.get_weights() for agent in agents]

    returns = []
    for _ in range(20):  # 500 env steps: updates at global steps 300, 400, 500 (rpm.size() > 8 * 25)
        ep_reward, ep_agent_rewards, steps = run_episode(env, agents)
        assert steps == MAX_STEP_PER_EPISODE
        # simple_spread with local_ratio=0: every agent gets the same global reward
        np.testing.assert_allclose(ep_agent_rewards, [ep_agent_rewards[0]] * 3, rtol=1e-6)
        assert ep_reward == pytest.approx(sum(ep_agent_rewards))
        returns.append(ep_reward)
    assert all(-1500 < r < 0 for r in returns)
    for agent, before in zip(agents, initial, strict=True):
        assert agent.rpm.size() == 500 and agent.global_train_step == 500
        # each transition stored: obs [18], the action vector [5] (softmax or tanh output), the truncation flag
        obs, act, rew, next_obs, terminal = agent.rpm.sample_batch_by_index(np.arange(25))
        assert act.shape == (25, 5) and terminal[-1] == 1.0 and terminal[:-1].sum() == 0  # PARL: done at 25 steps
        if continuous_actions:
            assert np.abs(act).max() <= 1.0
        else:
            np.testing.assert_allclose(act.sum(-1), 1.0, rtol=1e-5)
        after = agent.alg.model.get_weights()
        assert all(not np.array_equal(after[k], before[k]) for k in before)  # three actor + critic steps
        target = agent.alg.target_model.get_weights()
        assert all(not np.array_equal(target[k], after[k]) for k in after)  # soft (tau 0.01), not a copy

    # a learn call on a fresh batch returns PARL's critic cost (a numpy scalar) and moves the model
    agents[0].global_train_step = 99
    cost = agents[0].learn(agents)
    assert isinstance(cost, np.ndarray) and cost.shape == () and np.isfinite(cost) and cost > 0

    eval_rewards, eval_steps = run_evaluate_episodes(env, agents, 3)
    assert eval_steps == [25, 25, 25] and all(-1500 < r < 0 for r in eval_rewards)

    # train.py's save / restore (agent.save(model_dir + '/agent_i'), agent.restore(...))
    for i, agent in enumerate(agents):
        agent.save(str(tmp_path / f"agent_{i}"))
    fresh = build(env, continuous_actions)
    obs = env.reset()
    for i, agent in enumerate(fresh):
        agent.restore(str(tmp_path / f"agent_{i}"))
        np.testing.assert_allclose(agent.predict(obs[i]), agents[i].predict(obs[i]), rtol=1e-6)
