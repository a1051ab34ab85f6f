"""PARL 2.x's own QMIX code runs unchanged on this project: benchmark/torch/qmix's agent (QMixAgent), RNN model,
mixer, episode replay buffer and training / evaluation loops, copied verbatim from PARL 2.2.1 (each section names
its source file; only the imports are gathered at the top), driven with parl.algorithms.QMIX on Level-Based
Foraging in place of StarCraft II: the one replaced piece is the env wrapper (``LBFEnvWrapper`` below has the
interface of PARL's ``SC2EnvWrapper``: agent id and last action appended to each observation, available actions,
``(state, obs)`` / ``(next_state, next_obs, reward, terminated)``)."""

# ruff: noqa
import os
import random
from collections import deque
from copy import deepcopy

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import parl

import lbforaging  # noqa: E402, F401 (parl-core[marl]; missing fails, never skips)
parl.set_backend("torch")  # PARL 2.x torch code; with paddle installed too, PARL's users export PARL_BACKEND=torch
from parl.algorithms import QMIX


# ---- PARL 2.2.1 benchmark/torch/qmix/utils.py, verbatim (imports gathered above) ----


class OneHotTransform(object):
    def __init__(self, out_dim):
        self.out_dim = out_dim

    def __call__(self, agent_id):
        assert agent_id < self.out_dim
        one_hot_id = np.zeros(self.out_dim, dtype='float32')
        one_hot_id[agent_id] = 1.0
        return one_hot_id


# ---- PARL 2.2.1 benchmark/torch/qmix/rnn_model.py, verbatim (imports gathered above) ----


class RNNModel(parl.Model):
    def __init__(self, input_shape, n_actions, rnn_hidden_dim=64):
        super(RNNModel, self).__init__()
        self.rnn_hidden_dim = rnn_hidden_dim

        self.fc1 = nn.Linear(input_shape, rnn_hidden_dim)
        self.rnn = nn.GRUCell(rnn_hidden_dim, rnn_hidden_dim)
        self.fc2 = nn.Linear(rnn_hidden_dim, n_actions)

    def init_hidden(self):
        # make hidden states on same device as model
        return self.fc1.weight.new(1, self.rnn_hidden_dim).zero_()

    def forward(self, inputs, hidden_state):
        x = F.relu(self.fc1(inputs))
        h_in = hidden_state.reshape(-1, self.rnn_hidden_dim)

        h = self.rnn(x, h_in)
        q = self.fc2(h)  # (batch_size, n_actions)
        return q, h

    def update(self, model):
        self.load_state_dict(model.state_dict())


# ---- PARL 2.2.1 benchmark/torch/qmix/qmixer_model.py, verbatim (imports gathered above) ----


class QMixerModel(parl.Model):
    '''
    input: n_agents' agent_qs (a scalar for each agent)
    output: a scalar (Q)
    '''

    def __init__(self,
                 n_agents,
                 state_shape,
                 mixing_embed_dim=32,
                 hypernet_layers=2,
                 hypernet_embed_dim=64):
        super(QMixerModel, self).__init__()

        self.n_agents = n_agents
        self.state_shape = state_shape
        self.embed_dim = mixing_embed_dim
        if hypernet_layers == 1:
            self.hyper_w_1 = nn.Linear(self.state_shape,
                                       self.embed_dim * self.n_agents)
            self.hyper_w_2 = nn.Linear(self.state_shape, self.embed_dim)
        elif hypernet_layers == 2:
            self.hyper_w_1 = nn.Sequential(
                nn.Linear(self.state_shape, hypernet_embed_dim), nn.ReLU(),
                nn.Linear(hypernet_embed_dim, self.embed_dim * self.n_agents))
            self.hyper_w_2 = nn.Sequential(
                nn.Linear(self.state_shape, hypernet_embed_dim), nn.ReLU(),
                nn.Linear(hypernet_embed_dim, self.embed_dim))
        else:
            raise ValueError('hypernet_layers should be "1" or "2"!')

        self.hyper_b_1 = nn.Linear(self.state_shape, self.embed_dim)
        self.hyper_b_2 = nn.Sequential(
            nn.Linear(self.state_shape, self.embed_dim), nn.ReLU(),
            nn.Linear(self.embed_dim, 1))

    def forward(self, agent_qs, states):
        '''
        Args:
            agent_qs (torch.Tensor): (batch_size, T, n_agents)
            states (torch.Tensor):   (batch_size, T, state_shape)
        Returns:
            q_total (torch.Tensor):  (batch_size, T, 1)
        '''
        batch_size = agent_qs.size(0)
        states = states.reshape(-1, self.state_shape)
        agent_qs = agent_qs.view(-1, 1, self.n_agents)

        w1 = torch.abs(self.hyper_w_1(states))
        w1 = w1.view(-1, self.n_agents, self.embed_dim)
        b1 = self.hyper_b_1(states)
        b1 = b1.view(-1, 1, self.embed_dim)

        w2 = torch.abs(self.hyper_w_2(states))
        w2 = w2.view(-1, self.embed_dim, 1)
        b2 = self.hyper_b_2(states).view(-1, 1, 1)

        hidden = F.elu(torch.bmm(agent_qs, w1) + b1)
        y = torch.bmm(hidden, w2) + b2
        q_total = y.view(batch_size, -1, 1)
        return q_total

    def update(self, model):
        self.load_state_dict(model.state_dict())


# ---- PARL 2.2.1 benchmark/torch/qmix/replay_buffer.py, verbatim (imports gathered above) ----


class EpisodeExperience(object):
    def __init__(self, episode_len):
        self.max_len = episode_len

        self.episode_state = []
        self.episode_actions = []
        self.episode_reward = []
        self.episode_terminated = []
        self.episode_obs = []
        self.episode_available_actions = []
        self.episode_filled = []

    @property
    def count(self):
        return len(self.episode_state)

    def add(self, state, actions, reward, terminated, obs, available_actions,
            filled):
        assert self.count < self.max_len
        self.episode_state.append(state)
        self.episode_actions.append(actions)
        self.episode_reward.append(reward)
        self.episode_terminated.append(terminated)
        self.episode_obs.append(obs)
        self.episode_available_actions.append(available_actions)
        self.episode_filled.append(filled)

    def get_data(self):
        assert self.count == self.max_len
        return np.array(self.episode_state), np.array(self.episode_actions),\
                np.array(self.episode_reward), np.array(self.episode_terminated),\
                np.array(self.episode_obs),\
                np.array(self.episode_available_actions), np.array(self.episode_filled)


class EpisodeReplayBuffer(object):
    def __init__(self, max_buffer_size):
        self.max_buffer_size = max_buffer_size
        self.buffer = deque(maxlen=max_buffer_size)

    def add(self, episode_experience):
        self.buffer.append(episode_experience)

    @property
    def count(self):
        return len(self.buffer)

    def sample_batch(self, batch_size):
        batch = []

        if self.count < batch_size:
            batch = random.sample(self.buffer, self.count)
        else:
            batch = random.sample(self.buffer, batch_size)
        s_batch, a_batch, r_batch, t_batch, obs_batch, available_actions_batch,\
                filled_batch = [], [], [], [], [], [], []
        for episode in batch:
            s, a, r, t, obs, available_actions, filled = episode.get_data()
            s_batch.append(s)
            a_batch.append(a)
            r_batch.append(r)
            t_batch.append(t)
            obs_batch.append(obs)
            available_actions_batch.append(available_actions)
            filled_batch.append(filled)

        filled_batch = np.array(filled_batch)
        r_batch = np.array(r_batch)
        t_batch = np.array(t_batch)
        a_batch = np.array(a_batch)
        obs_batch = np.array(obs_batch)
        available_actions_batch = np.array(available_actions_batch)

        return s_batch, a_batch, r_batch, t_batch, obs_batch,\
                available_actions_batch, filled_batch


# ---- PARL 2.2.1 benchmark/torch/qmix/qmix_agent.py, verbatim (imports gathered above) ----


class QMixAgent(parl.Agent):
    def __init__(self, algorithm, exploration_start, min_exploration,
                 exploration_decay, update_target_interval):
        self.alg = algorithm
        self.global_step = 0
        self.exploration = exploration_start
        self.min_exploration = min_exploration
        self.exploration_decay = exploration_decay
        self.device = torch.device('cuda' if torch.cuda.
                                   is_available() else 'cpu')
        self.target_update_count = 0
        self.update_target_interval = update_target_interval

    def save(self, save_dir, agent_model_name, qmixer_model_name):
        if not os.path.exists(save_dir):
            os.mkdir(save_dir)
        agent_model_path = os.path.join(save_dir, agent_model_name)
        qmixer_model_path = os.path.join(save_dir, agent_model_name)
        torch.save(self.alg.agent_model.state_dict(), agent_model_path)
        torch.save(self.alg.qmixer_model.state_dict(), qmixer_model_path)
        print('save model sucessfully!')

    def restore(self, save_dir, agent_model_name, qmixer_model_name):
        agent_model_path = os.path.join(save_dir, agent_model_name)
        qmixer_model_path = os.path.join(save_dir, agent_model_name)
        self.alg.agent_model.load_state_dict(torch.load(agent_model_path))
        self.alg.qmixer_model.load_state_dict(torch.load(qmixer_model_path))
        print('restore model sucessfully!')

    def reset_agent(self, batch_size=1):
        self.alg._init_hidden_states(batch_size)

    def sample(self, obs, available_actions):
        ''' sample actions via epsilon-greedy
        Args:
            obs (np.ndarray):               (n_agents, obs_shape)
            available_actions (np.ndarray): (n_agents, n_actions)
        Returns:
            actions (np.ndarray): sampled actions of agents
        '''
        epsilon = np.random.random()
        if epsilon > self.exploration:
            actions = self.predict(obs, available_actions)
        else:
            available_actions = torch.tensor(
                available_actions, dtype=torch.float32)
            actions = torch.distributions.Categorical(
                available_actions).sample().long().cpu().detach().numpy()
        self.exploration = max(self.min_exploration,
                               self.exploration - self.exploration_decay)
        return actions

    def predict(self, obs, available_actions):
        '''take greedy actions
        Args:
            obs (np.ndarray):               (n_agents, obs_shape)
            available_actions (np.ndarray): (n_agents, n_actions)
        Returns:
            actions (np.ndarray):           (n_agents, )
        '''
        obs = torch.tensor(obs, dtype=torch.float32, device=self.device)
        available_actions = torch.tensor(
            available_actions, dtype=torch.long, device=self.device)
        agents_q, self.alg.hidden_states = self.alg.predict_local_q(
            obs, self.alg.hidden_states)
        # mask unavailable actions
        agents_q[available_actions == 0] = -1e10
        actions = agents_q.max(dim=1)[1].detach().cpu().numpy()
        return actions

    def update_target(self):
        self.alg.target_agent_model.update(self.alg.agent_model)
        self.alg.target_qmixer_model.update(self.alg.qmixer_model)

    def learn(self, state_batch, actions_batch, reward_batch, terminated_batch,
              obs_batch, available_actions_batch, filled_batch):
        '''
        Args:
            state (np.ndarray):                   (batch_size, T, state_shape)
            actions (np.ndarray):                 (batch_size, T, n_agents)
            reward (np.ndarray):                  (batch_size, T, 1)
            terminated (np.ndarray):              (batch_size, T, 1)
            obs (np.ndarray):                     (batch_size, T, n_agents, obs_shape)
            available_actions_batch (np.ndarray): (batch_size, T, n_agents, n_actions)
            filled_batch (np.ndarray):            (batch_size, T, 1)
        Returns:
            mean_loss (float): train loss
            mean_td_error (float): train TD error
        '''
        if self.global_step % self.update_target_interval == 0:
            self.update_target()
            self.target_update_count += 1

        self.global_step += 1

        state_batch = torch.tensor(
            state_batch, dtype=torch.float32, device=self.device)
        actions_batch = torch.tensor(
            actions_batch, dtype=torch.long, device=self.device)
        reward_batch = torch.tensor(
            reward_batch, dtype=torch.float32, device=self.device)
        terminated_batch = torch.tensor(
            terminated_batch, dtype=torch.float32, device=self.device)
        obs_batch = torch.tensor(
            obs_batch, dtype=torch.float32, device=self.device)
        available_actions_batch = torch.tensor(
            available_actions_batch, dtype=torch.float32, device=self.device)
        filled_batch = torch.tensor(
            filled_batch, dtype=torch.float32, device=self.device)
        mean_loss, mean_td_error = self.alg.learn(
            state_batch, actions_batch, reward_batch, terminated_batch,
            obs_batch, available_actions_batch, filled_batch)
        return mean_loss, mean_td_error


# ---- PARL 2.2.1 benchmark/torch/qmix/train.py: run_train_episode, run_evaluate_episode, verbatim ----


def run_train_episode(env, agent, rpm, config):
    episode_limit = config['episode_limit']
    agent.reset_agent()
    episode_reward = 0.0
    episode_step = 0
    terminated = False
    state, obs = env.reset()

    episode_experience = EpisodeExperience(episode_limit)

    while not terminated:
        available_actions = env.get_available_actions()
        actions = agent.sample(obs, available_actions)
        next_state, next_obs, reward, terminated = env.step(actions)
        episode_reward += reward
        episode_step += 1
        episode_experience.add(state, actions, [reward], [terminated], obs,
                               available_actions, [0])
        state = next_state
        obs = next_obs

    # fill the episode
    state_zero = np.zeros_like(state, dtype=state.dtype)
    actions_zero = np.zeros_like(actions, dtype=actions.dtype)
    obs_zero = np.zeros_like(obs, dtype=obs.dtype)
    available_actions_zero = np.zeros_like(
        available_actions, dtype=available_actions.dtype)
    reward_zero = 0
    terminated_zero = True
    for _ in range(episode_step, episode_limit):
        episode_experience.add(state_zero, actions_zero, [reward_zero],
                               [terminated_zero], obs_zero,
                               available_actions_zero, [1])
    rpm.add(episode_experience)
    is_win = env.win_counted

    mean_loss = []
    mean_td_error = []
    if rpm.count > config['memory_warmup_size']:
        for _ in range(2):
            s_batch, a_batch, r_batch, t_batch, obs_batch, available_actions_batch,\
                    filled_batch = rpm.sample_batch(config['batch_size'])
            loss, td_error = agent.learn(s_batch, a_batch, r_batch, t_batch,
                                         obs_batch, available_actions_batch,
                                         filled_batch)
            mean_loss.append(loss)
            mean_td_error.append(td_error)

    mean_loss = np.mean(mean_loss) if mean_loss else None
    mean_td_error = np.mean(mean_td_error) if mean_td_error else None
    return episode_reward, episode_step, is_win, mean_loss, mean_td_error


def run_evaluate_episode(env, agent):
    agent.reset_agent()
    episode_reward = 0.0
    episode_step = 0
    terminated = False
    state, obs = env.reset()

    while not terminated:
        available_actions = env.get_available_actions()
        actions = agent.predict(obs, available_actions)
        state, obs, reward, terminated = env.step(actions)
        episode_step += 1
        episode_reward += reward

    is_win = env.win_counted
    return episode_reward, episode_step, is_win


# ---- the replaced piece: PARL's SC2EnvWrapper interface over Level-Based Foraging ----


class LBFEnvWrapper(object):
    """``SC2EnvWrapper``'s attributes and methods on ``parl.env.make_multiagent_env``: observations with the last
    actions and agent ids appended (PARL's order), the team reward (sum over agents), and ``terminated`` at a time
    limit too (SMAC ends an episode there with ``terminated=True``; PARL's loop stops on it)."""

    def __init__(self, env_id, seed):
        from parl.env import make_multiagent_env

        self.env = make_multiagent_env(env_id)
        self.seed = seed
        self.episode_limit = self.env.episode_limit
        self.n_actions = self.env.n_actions
        self.n_agents = self.env.n_agents
        self.state_shape = self.env.state_dim
        self.obs_shape = self.env.obs_dim + self.n_agents + self.n_actions
        self.agents_id_one_hot = np.eye(self.n_agents, dtype="float32")
        self.win_counted = False

    def _obs(self, obs, actions):
        last_actions_one_hot = np.zeros((self.n_agents, self.n_actions), dtype="float32")
        if actions is not None:
            last_actions_one_hot[np.arange(self.n_agents), actions] = 1.0
        return np.concatenate([obs, last_actions_one_hot, self.agents_id_one_hot], axis=-1)

    def get_available_actions(self):
        return self.avail.astype("float32")

    def reset(self):
        obs, info = self.env.reset(seed=self.seed)
        self.seed = None
        self.avail, self.win_counted = info["avail_actions"], False
        return info["state"], self._obs(obs, None)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(actions))
        self.avail = info["avail_actions"]
        self.win_counted = bool(terminated)  # all food collected
        return info["state"], self._obs(obs, actions), float(reward.sum()), bool(terminated or truncated)


# PARL's benchmark/torch/qmix/qmix_config.py with a budget for a test (and its SMAC keys dropped)
CONFIG = {
    'replay_buffer_size': 5000,
    'mixing_embed_dim': 32,
    'rnn_hidden_dim': 64,
    'lr': 0.0005,
    'memory_warmup_size': 4,
    'gamma': 0.99,
    'exploration_start': 1.0,
    'min_exploration': 0.1,
    'exploration_decay': 2e-4,
    'update_target_interval': 8,
    'batch_size': 4,
    'clip_grad_norm': 10,
    'hypernet_layers': 2,
    'hypernet_embed_dim': 64,
    'double_q': True,
}


def test_parl2_qmix_benchmark_code_runs_unchanged_on_lbf():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    # PARL's train.py main(), with LBFEnvWrapper in place of SC2EnvWrapper(StarCraft2Env(...))
    config = deepcopy(CONFIG)
    env = LBFEnvWrapper("Foraging-8x8-2p-2f-coop-v3", seed=0)
    config['episode_limit'] = env.episode_limit
    config['obs_shape'] = env.obs_shape
    config['state_shape'] = env.state_shape
    config['n_agents'] = env.n_agents
    config['n_actions'] = env.n_actions

    rpm = EpisodeReplayBuffer(config['replay_buffer_size'])
    agent_model = RNNModel(config['obs_shape'], config['n_actions'],
                           config['rnn_hidden_dim'])
    qmixer_model = QMixerModel(
        config['n_agents'], config['state_shape'], config['mixing_embed_dim'],
        config['hypernet_layers'], config['hypernet_embed_dim'])

    algorithm = QMIX(agent_model, qmixer_model, config['double_q'],
                     config['gamma'], config['lr'], config['clip_grad_norm'])

    qmix_agent = QMixAgent(
        algorithm, config['exploration_start'], config['min_exploration'],
        config['exploration_decay'], config['update_target_interval'])

    while rpm.count < config['memory_warmup_size']:
        train_reward, train_step, train_is_win, train_loss, train_td_error\
                = run_train_episode(env, qmix_agent, rpm, config)
    # (end of PARL's code) warm-up: no learning until the buffer holds more than memory_warmup_size episodes
    assert rpm.count == 4 and qmix_agent.global_step == 0 and train_loss is None
    total_steps, losses = 0, []
    for _ in range(6):
        train_reward, train_step, train_is_win, train_loss, train_td_error = run_train_episode(
            env, qmix_agent, rpm, config)
        total_steps += train_step
        assert 1 <= train_step <= 50 and 0.0 <= train_reward <= 1.0 and train_is_win == (train_reward >= 1.0 - 1e-6)
        losses.append((train_loss, train_td_error))
    # PARL's loop: two learn calls per episode once rpm.count > memory_warmup_size (the first of the 6 episodes
    # brings it to 5), the target synced through model.update() every update_target_interval learn calls
    assert qmix_agent.global_step == 12 and qmix_agent.target_update_count == 2  # at learn calls 0 and 8
    assert all(np.isfinite(loss) and loss > 0 and np.isfinite(td) for loss, td in losses)
    # epsilon decayed by exploration_decay per sample() call: one per env step of the 10 episodes
    sampled = sum(len(e.episode_state) - int(np.sum(e.episode_filled)) for e in rpm.buffer)
    assert qmix_agent.exploration == pytest.approx(max(0.1, 1.0 - 2e-4 * sampled))
    # PARL's episodes: episode_limit steps, the real ones filled = 0 then padding filled = 1 / terminated = True
    for episode in rpm.buffer:
        s, a, r, t, obs, avail, filled = episode.get_data()
        length = int((filled == 0).sum())
        assert filled.shape == (50, 1) and (filled[:length] == 0).all() and (filled[length:] == 1).all()
        assert t[length - 1, 0] and (obs.shape, avail.shape) == ((50, 2, 12 + 2 + 6), (50, 2, 6))
    # PARL's QMixAgent.update_target (its models' update()) made the targets equal to the online networks at
    # learn call 8; the 4 learn calls since moved the online networks only
    pairs = ((agent_model, algorithm.target_agent_model), (qmixer_model, algorithm.target_qmixer_model))
    for online, target in pairs:
        w, t = online.get_weights(), target.get_weights()
        assert any(not np.array_equal(w[k], t[k]) for k in w)
    qmix_agent.update_target()
    for online, target in pairs:
        w, t = online.get_weights(), target.get_weights()
        assert all(np.array_equal(w[k], t[k]) for k in w)
    # one more learn, on a batch of PARL's buffer: the returned loss and TD error are those of our QMIX's
    # arithmetic on the same tensors (a copy of the algorithm, fed PARL's tensors directly)
    batch = rpm.sample_batch(config['batch_size'])
    twin = deepcopy(algorithm)
    expected = twin.learn(*[torch.tensor(np.array(x), dtype=torch.float32) for x in batch])
    assert qmix_agent.learn(*batch) == pytest.approx(expected, rel=1e-5)
    # PARL's evaluation loop: greedy, through predict() and the algorithm's hidden state
    eval_reward, eval_step, eval_is_win = run_evaluate_episode(env, qmix_agent)
    assert 0.0 <= eval_reward <= 1.0 and 1 <= eval_step <= 50 and eval_is_win == (eval_reward >= 1.0 - 1e-6)
    assert tuple(algorithm.hidden_states.shape) == (2, 64)  # PARL's agent stored the GRU state of the last step
