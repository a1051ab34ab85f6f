"""PARL 2.x's COMA code runs unchanged on parl.algorithms.COMA: the model and agent classes of PARL 2.2.1's
``benchmark/torch/coma`` (``sc2_model.py``, ``sc2_agent.py``) and ``run_episode`` of its ``train.py``, verbatim,
with the StarCraft II env replaced by Level-Based Foraging behind StarCraft2Env's methods (SMAC and the game
cannot be installed here); the config is PARL's ``coma_config.py`` with a shorter run."""

import lbforaging  # noqa: E402, F401 (parl-core[marl]; missing fails, never skips)
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

import parl
from parl.algorithms import COMA

# ----- PARL 2.2.1 benchmark/torch/coma/sc2_model.py (verbatim) -------------------------------------------


class ComaModel(parl.Model):
    def __init__(self, config):
        super(ComaModel, self).__init__()  # noqa: UP008 - as written in PARL 2.x
        self.n_actions = config['n_actions']
        self.n_agents = config['n_agents']
        self.state_shape = config['state_shape']
        self.obs_shape = config['obs_shape']

        actor_input_dim = self._get_actor_input_dim()
        critic_input_dim = self._get_critic_input_dim()

        self.actor_model = ActorModel(actor_input_dim, self.n_actions)
        self.critic_model = CriticModel(critic_input_dim, self.n_actions)

    def policy(self, obs, hidden_state):
        return self.actor_model(obs, hidden_state)

    def value(self, inputs):
        return self.critic_model(inputs)

    def get_actor_params(self):
        return self.actor_model.parameters()

    def get_critic_params(self):
        return self.critic_model.parameters()

    def _get_actor_input_dim(self):
        input_shape = self.obs_shape  # obs: 30 in 3m map
        input_shape += self.n_actions  # agent's last action (one_hot): 9 in 3m map
        input_shape += self.n_agents  # agent's one_hot id: 3 in 3m map
        return input_shape  # 30 + 9 + 3 = 42

    def _get_critic_input_dim(self):
        input_shape = self.state_shape  # state: 48 in 3m map
        input_shape += self.obs_shape  # obs: 30 in 3m map
        input_shape += self.n_agents  # agent_id: 3 in 3m map
        input_shape += self.n_actions * self.n_agents * 2  # all agents' action and last_action (one-hot): 54 in 3m map
        return input_shape  # 48 + 30+ 3 = 135


# all agents share one actor network
class ActorModel(parl.Model):
    def __init__(self, input_shape, act_dim):
        """ input : obs, include the agent's id and last action, shape: (batch, obs_shape + n_action + n_agents)
            output: one agent's q(obs, act)
        """
        super(ActorModel, self).__init__()  # noqa: UP008
        self.hid_size = 64

        self.fc1 = nn.Linear(input_shape, self.hid_size)
        self.rnn = nn.GRUCell(self.hid_size, self.hid_size)
        self.fc2 = nn.Linear(self.hid_size, act_dim)

    def init_hidden(self):
        # new hidden states
        return self.fc1.weight.new(1, self.hid_size).zero_()

    def forward(self, obs, h0):
        x = F.relu(self.fc1(obs))
        h1 = h0.reshape(-1, self.hid_size)
        h2 = self.rnn(x, h1)
        policy = self.fc2(h2)
        return policy, h2


class CriticModel(parl.Model):
    def __init__(self, input_shape, act_dim):
        """ inputs: [ s(t), o(t)_a, u(t)_a, agent_a, u(t-1) ], shape: (Batch, input_shape)
            output: Q,   shape: (Batch, n_actions)
            Batch = ep_num * n_agents
        """
        super(CriticModel, self).__init__()  # noqa: UP008
        hid_size = 128
        self.fc1 = nn.Linear(input_shape, hid_size)
        self.fc2 = nn.Linear(hid_size, hid_size)
        self.fc3 = nn.Linear(hid_size, act_dim)

    def forward(self, inputs):
        hid1 = F.relu(self.fc1(inputs))
        hid2 = F.relu(self.fc2(hid1))
        Q = self.fc3(hid2)
        return Q


# ----- PARL 2.2.1 benchmark/torch/coma/sc2_agent.py (verbatim) -------------------------------------------

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class Agents(parl.Agent):
    def __init__(self, algorithm, config):
        self.n_actions = config['n_actions']
        self.n_agents = config['n_agents']
        self.state_shape = config['state_shape']
        self.obs_shape = config['obs_shape']

        self.config = config
        self.train_steps = 0
        self.rnn_h = None
        super(Agents, self).__init__(algorithm)  # noqa: UP008
        print('Init all agents')

    def init_hidden(self):
        """ function: init a hidden tensor for every agent at the begging of every episode
            self.rnn_h: rnn hidden state, shape (n_agents, hidden_size)
        """
        self.rnn_h = self.alg.init_hidden(1)[0]

    def predict(self, obs, rnn_h_in):
        """input:
                obs: obs + last_action + agent_id, shape: (1, obs_shape + n_actions + n_agents)
                rnn_h_in: rnn's hidden input
            output:
                prob: output of actor, shape: (1, n_actions)
                rnn_h_out: rnn's hidden output
        """
        obs = np.expand_dims(obs, 0)
        obs = torch.tensor(obs, dtype=torch.float32).to(device)
        prob, rnn_h_out = self.alg.predict(obs, rnn_h_in)
        return prob, rnn_h_out

    def sample(self,
               obs,
               last_action,
               agent_id,
               avail_actions,
               epsilon,
               test=False):
        """input:
                obs (array): agent i's obs
                last_action (int): agent i's last action
                agent_id (int): agent index
                avail_actions (one_hot): available actions
                epsilon (float): e_greed discount
                test (bool): train or test
            output:
                action: int
                prob: probability of every action, float, 0 ~ 1
        """
        obs = obs.copy()
        # make obs: obs + agent's last action(one_hot) + agent's id(one_hot)
        last_act_one_hot = np.zeros(self.n_actions)
        last_act_one_hot[last_action] = 1.
        id_one_hot = np.zeros(self.n_agents)
        id_one_hot[agent_id] = 1.
        obs = np.hstack((obs, last_act_one_hot))
        obs = np.hstack((obs, id_one_hot))

        # predict action prob
        prob, self.rnn_h[agent_id] = self.predict(obs, self.rnn_h[agent_id])

        # add noise
        avail_actions = torch.tensor(
            avail_actions, dtype=torch.float32).unsqueeze(0).to(
                device)  # shape: (1, n_actions)
        action_num = avail_actions.sum()  # how many actions are available
        prob = ((1 - epsilon) * prob +
                torch.ones_like(prob) * epsilon / action_num)
        prob[avail_actions == 0] = 0.0  # set avail action

        # choose action
        if epsilon == 0 or test:
            action = torch.argmax(prob)
        else:
            action = Categorical(prob).sample().long()
        return action.cpu()

    def _get_actor_inputs(self, batch):
        """ o(t), u(t-1)_a, agent_id
        """
        obs = batch['o']
        u_onehot = batch['u_onehot']
        u_onehot_last = np.zeros_like(u_onehot)
        u_onehot_last[:, 1:] = u_onehot[:, :-1]
        ep_num = batch['o'].shape[0]
        tr_num = batch['o'].shape[1]

        actor_inputs = []
        for agent_id in range(self.n_agents):
            obs_a = obs[:, :, agent_id]
            u_a_onehot_last = u_onehot_last[:, :, agent_id]
            id_onehot = np.zeros((ep_num, tr_num, self.n_agents))
            id_onehot[:, :, agent_id] = 1.
            # actor inputs: obs + agent's last action(one_hot) + agent's id(one_hot)
            a_inputs = np.concatenate((obs_a, u_a_onehot_last, id_onehot),
                                      axis=2)
            # a_inpits shape (ep_num, tr_num, actor_input_dim)
            actor_inputs.append(a_inputs)

        actor_inputs = np.stack(
            actor_inputs,
            axis=2)  # shape (ep_num, tr_num, n_agents, actor_input_dim)
        return actor_inputs

    def _get_critic_inputs(self, batch):
        """ o(t)_a, s(t), u(t)_-a, u(t-1), agent_id
        """
        ep_num = batch['o'].shape[0]
        tr_num = batch['o'].shape[1]

        # o, o_next, state, state_next
        o = batch['o']  # shape (ep_num, tr_num, n_agents, obs_shape)
        o_next = np.zeros_like(o)
        o_next[:, :-1] = o[:, 1:]
        s = batch['s']  # shape (ep_num, tr_num, state_shape)
        s_next = np.zeros_like(s)
        s_next[:, :-1] = s[:, 1:]
        # u_onehot, u_onehot_last shape (ep_num, tr_num, n_agents, n_actions)
        u_onehot = batch['u_onehot']
        u_onehot_next = np.zeros_like(u_onehot)
        u_onehot_next[:, :-1] = u_onehot[:, 1:]
        u_onehot_last = np.zeros_like(u_onehot)
        u_onehot_last[:, 1:] = u_onehot[:, :-1]

        critic_inputs = []
        critic_inputs_next = []
        for agent_id in range(self.n_agents):
            # get o(t)_a, s(t)
            o_a = o[:, :, agent_id]  # shape (ep_num, tr_num, obs_shape)
            o_a_next = o_next[:, :, agent_id]
            s_a = s  # shape (ep_num, tr_num, state_shape)
            s_a_next = s_next
            # get u(t-1)  shape (ep_num, tr_num, n_agents * n_actions)
            u_all_onehot = u_onehot.reshape((ep_num, tr_num,
                                             self.n_agents * self.n_actions))
            u_all_onehot_next = u_onehot_next.reshape(
                (ep_num, tr_num, self.n_agents * self.n_actions))
            u_all_onehot_last = u_onehot_last.reshape(
                (ep_num, tr_num, self.n_agents * self.n_actions))
            # get u(t)_-a,   set 0 to mask action, shape (ep_num, tr_num, n_agents * n_actions)
            u_not_a_onehot = u_all_onehot.copy()
            u_not_a_onehot_next = u_all_onehot_next.copy()
            m_s = agent_id * self.n_actions  # mask start flag
            m_e = (agent_id + 1) * self.n_actions  # mask end flag
            u_not_a_onehot[:, :, m_s:m_e] = 0
            u_not_a_onehot_next[:, :, m_s:m_e] = 0
            # get id onehot, shape (ep_num, tr_num, n_agents)
            id_onehot = np.zeros((ep_num, tr_num, self.n_agents))
            id_onehot[:, :, agent_id] = 1.

            # input:      o,      s,      u_-a,      u_last, agent_id
            # input_next: o_next, s_next, u_-a_next, u,      agent_id
            # shape (ep_num, tr_num, critic_input_dim)
            c_inputs = np.concatenate(
                (o_a, s_a, u_not_a_onehot, u_all_onehot_last, id_onehot),
                axis=2)
            c_inputs_next = np.concatenate(
                (o_a_next, s_a_next, u_not_a_onehot_next, u_all_onehot,
                 id_onehot),
                axis=2)
            critic_inputs.append(c_inputs)
            critic_inputs_next.append(c_inputs_next)
        critic_inputs = np.stack(critic_inputs, axis=2)
        critic_inputs_next = np.stack(critic_inputs_next, axis=2)
        # shape (ep_num, tr_num, n_agents, critic_input_dim)
        return critic_inputs, critic_inputs_next

    def _get_avail_transitions_num(self, isover_batch):
        """ input:
                isover_batch: shape (ep_num, tr_num, 1)
            output:
                max_tr_num: max avail transitions number in all episodes
        """
        ep_num = isover_batch.shape[0]
        max_tr_num = 0
        for ep_id in range(ep_num):
            for tr_id in range(self.config['episode_limit']):
                if isover_batch[ep_id, tr_id, 0] == 1:
                    if tr_id + 1 >= max_tr_num:
                        max_tr_num = tr_id + 1
                    break
        return max_tr_num

    def learn(self, batch, epsilon=None):
        """ input:
                batch: dict(o, s, u, r, u_onehot, avail_u, padded, isover)
                epsilon: e-greedy discount
        """
        # different episode has different avail transition length
        tr_num = self._get_avail_transitions_num(batch['isover'])
        for key in batch.keys():
            # cut batch data's episode length
            batch[key] = batch[key][:, :tr_num]

        # get actor input and critic input
        batch['actor_inputs'] = self._get_actor_inputs(batch)
        batch['critic_inputs'], batch[
            'critic_inputs_next'] = self._get_critic_inputs(batch)

        # change batch data to torch tensor
        for key in batch.keys():
            if key == 'u':
                batch[key] = torch.tensor(
                    batch[key], dtype=torch.long).to(device)
            else:
                batch[key] = torch.tensor(
                    batch[key], dtype=torch.float32).to(device)

        self.alg.learn(batch, epsilon)

        if self.train_steps > 0 and self.train_steps % self.config[
                'target_update_cycle'] == 0:
            self.alg.sync_target()
        self.train_steps += 1


# ----- PARL 2.2.1 benchmark/torch/coma/train.py: run_episode (verbatim) -----------------------------------


def run_episode(env, agents, config, test=False):
    o, u, r, s, avail_u, u_onehot, isover, padded = [], [], [], [], [], [], [], []
    env.reset()
    done = False
    step = 0
    ep_reward = 0
    last_act = [0 for _ in range(config['n_agents'])]
    agents.init_hidden()  # init rnn h0 for all agents

    while not done:
        obs = env.get_obs()
        state = env.get_state()
        acts, avail_acts, acts_onehot = [], [], []

        for agent_id in range(config['n_agents']):
            avail_act = env.get_avail_agent_actions(agent_id)

            # action
            epsilon = 0 if test else config['epsilon']
            act = agents.sample(obs[agent_id], last_act[agent_id], agent_id,
                                avail_act, epsilon, test)
            last_act[agent_id] = act

            # action one-hot
            act_onehot = np.zeros(config['n_actions'])
            act_onehot[act] = 1
            acts.append(act)
            acts_onehot.append(act_onehot)
            avail_acts.append(avail_act)

        # step
        reward, done, _ = env.step(acts)

        if step == config['episode_limit'] - 1:
            done = 1

        o.append(obs)
        s.append(state)
        u.append(np.reshape(acts, [config['n_agents'], 1]))
        u_onehot.append(acts_onehot)
        avail_u.append(avail_acts)
        r.append([reward])
        isover.append([done])
        padded.append([0.])  # 0: no padded, 1: padded

        ep_reward += reward
        step += 1

    # fill trainsition len to episode_limit
    for _ in range(step, config['episode_limit']):
        # shape: (config['episode_limit'], n_agents, shape)
        o.append(np.zeros((config['n_agents'], config['obs_shape'])))
        s.append(np.zeros(config['state_shape']))
        u.append(np.zeros([config['n_agents'], 1]))
        u_onehot.append(np.zeros((config['n_agents'], config['n_actions'])))
        avail_u.append(np.zeros((config['n_agents'], config['n_actions'])))
        # shape: (config['episode_limit'], 1)
        r.append([0.])
        padded.append([1.])
        isover.append([1.])

    ep_data = dict(
        o=o.copy(),
        s=s.copy(),
        u=u.copy(),
        r=r.copy(),
        avail_u=avail_u.copy(),
        u_onehot=u_onehot.copy(),
        padded=padded.copy(),
        isover=isover.copy())

    # add an additional dimension at axis 0 for each item
    for key in ep_data.keys():
        # each items shape: (1, trainsition_num, n_agents, own_shape)
        ep_data[key] = np.array([ep_data[key]])

    return ep_data, ep_reward


# ----- the replaced environment --------------------------------------------------------------------------


class LBFAsStarCraft2Env:
    """Level-Based Foraging (parl.env.make_multiagent_env) behind the StarCraft2Env methods PARL's COMA calls;
    the reward is the team reward (the sum over agents), as SMAC's shared reward."""

    def __init__(self, env_id="Foraging-8x8-2p-2f-coop-v3", seed=0):
        from parl.env import make_multiagent_env

        self.env = make_multiagent_env(env_id)
        self.seed = seed

    def get_env_info(self):
        return {"n_actions": self.env.n_actions, "n_agents": self.env.n_agents, "state_shape": self.env.state_dim,
                "obs_shape": self.env.obs_dim, "episode_limit": self.env.episode_limit}

    def reset(self):
        self.obs, info = self.env.reset(seed=self.seed)
        self.seed = None
        self.state, self.avail = info["state"], info["avail_actions"]

    def get_obs(self):
        return list(self.obs)

    def get_state(self):
        return self.state

    def get_avail_agent_actions(self, agent_id):
        return self.avail[agent_id].astype(np.float32).tolist()

    def step(self, actions):
        self.obs, reward, terminated, truncated, info = self.env.step(np.array([int(a) for a in actions]))
        self.state, self.avail = info["state"], info["avail_actions"]
        return float(reward.sum()), bool(terminated or truncated), {}

    def close(self):
        self.env.close()


# PARL 2.2.1 benchmark/torch/coma/coma_config.py, learning part (the run is shortened below)
CONFIG = {'gamma': 0.99, 'grad_norm_clip': 10, 'td_lambda': 0.8, 'actor_lr': 1e-4, 'critic_lr': 1e-3,
          'target_update_cycle': 200, 'epsilon': 0.5, 'anneal_epsilon': 0.00064, 'min_epsilon': 0.02,
          'n_episodes': 5, 'test_episode_n': 20}


def test_parl2_coma_benchmark_code_runs_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    np.random.seed(0)
    env = LBFAsStarCraft2Env()
    config = dict(CONFIG, target_update_cycle=2, **env.get_env_info())  # main() of PARL's train.py
    assert (config['n_actions'], config['n_agents'], config['obs_shape'], config['episode_limit']) == (6, 2, 12, 50)
    model = ComaModel(config=config)
    algorithm = COMA(
        model,
        n_actions=config['n_actions'],
        n_agents=config['n_agents'],
        grad_norm_clip=config['grad_norm_clip'],
        actor_lr=config['actor_lr'],
        critic_lr=config['critic_lr'],
        gamma=config['gamma'],
        td_lambda=config['td_lambda'])
    agents = Agents(algorithm, config)

    # PARL's run(): epsilon annealed per epoch, n_episodes episodes concatenated, one learn per epoch
    critic_before = model.critic_model.fc3.weight.detach().clone()
    actor_before = model.actor_model.fc2.weight.detach().clone()
    for _epoch in range(4):
        if config['epsilon'] > config['min_epsilon']:
            config['epsilon'] -= config['anneal_epsilon']
        ep_data_list = [run_episode(env, agents, config, test=False)[0] for _ in range(config['n_episodes'])]
        ep_batch = ep_data_list[0]
        for ep_data in ep_data_list[1:]:
            for key in ep_batch.keys():
                ep_batch[key] = np.concatenate((ep_batch[key], ep_data[key]), axis=0)
        assert ep_batch['o'].shape == (5, 50, 2, 12) and ep_batch['u'].shape == (5, 50, 2, 1)
        agents.learn(ep_batch, config['epsilon'])
        # Agents.learn added PARL's inputs: obs 12 + last action 6 + id 2; state 24 + obs 12 + id 2 + 2 x 2 x 6
        assert ep_batch['actor_inputs'].shape[-1] == 20 and ep_batch['critic_inputs'].shape[-1] == 62
        info = agents.alg.get_info()
        assert np.isfinite(info['train/critic_loss']) and np.isfinite(info['train/actor_loss'])
    assert agents.train_steps == 4 and config['epsilon'] == pytest.approx(0.5 - 4 * 0.00064)
    assert not torch.equal(model.critic_model.fc3.weight, critic_before)
    assert not torch.equal(model.actor_model.fc2.weight, actor_before)
    # Agents.learn synced the target at train_steps 2 (target_update_cycle 2); one learn step since
    target = agents.alg.target_model.critic_model.fc3.weight
    assert not torch.equal(target, model.critic_model.fc3.weight) and not torch.equal(target, critic_before)

    # every agent keeps its own hidden state in PARL's sample() (init_hidden gives each agent its memory)
    agents.init_hidden()
    obs, avail = env.get_obs(), env.get_avail_agent_actions(0)
    agents.sample(obs[0], 0, 0, avail, 0.1)
    assert agents.rnn_h[0].abs().sum() > 0 and agents.rnn_h[1].abs().sum() == 0

    # test mode: argmax actions; a team return of LBF (0 to 1, food shares summed over the agents)
    _, ep_reward = run_episode(env, agents, config, test=True)
    assert 0.0 <= ep_reward <= 1.0 + 1e-6

    # save / restore as PARL's main() does
    agents.save(save_path='./model/coma.ckpt')
    fresh = Agents(COMA(ComaModel(config=config), n_actions=6, n_agents=2, grad_norm_clip=10, actor_lr=1e-4,
                        critic_lr=1e-3, gamma=0.99, td_lambda=0.8), config)
    fresh.restore('./model/coma.ckpt')
    for name, value in model.get_weights().items():
        np.testing.assert_array_equal(fresh.alg.model.get_weights()[name], value)
    env.close()
