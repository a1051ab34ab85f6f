"""QMIX test models on either backend, same layer names and sizes (weights copy across, Linear transposed).

- ``RNNAgent``: PARL's ``benchmark/torch/qmix/rnn_model.py`` / ``examples/QMIX/rnn_model.py`` (Linear-ReLU,
  GRUCell, Linear), ``init_hidden() -> [1, hidden]``, ``forward(obs, h) -> (q, h)``.
- ``QMixer``: PARL's ``qmixer_model.py`` (hypernetworks with ``abs`` weights, 2 layers of ``hypernet_embed``).
- ``LinearAgent``: ``q = obs @ W`` with a given W (no recurrence), for hand-computed losses.
- ``SumMixer``: ``Q_tot = sum_i Q_i`` (VDN; no parameters), for hand-computed losses.
"""

from __future__ import annotations

import functools
import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest


@functools.cache
def qmix_models(backend: str) -> SimpleNamespace:
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (pip install 'parl-algorithms[{backend}]')")
    if backend == "torch":
        import torch
        import torch.nn.functional as F
        from torch import nn

        from parl_core.torch import Agent, Model

        def gru(cell, x, h):
            return cell(x, h)

        def matrix(layer, w):
            return nn.Parameter(torch.tensor(w, dtype=torch.float32))

        abs_, elu, bmm, relu = torch.abs, F.elu, torch.bmm, F.relu

        def zeros(h):
            return torch.zeros(1, h)

        def to_numpy(t):
            return t.detach().cpu().numpy()

        def tensor(a):
            return torch.as_tensor(np.asarray(a))

        seed = torch.manual_seed
    else:
        import paddle
        import paddle.nn.functional as F
        from paddle import nn

        from parl_core.paddle import Agent, Model

        def gru(cell, x, h):
            return cell(x, h)[1]

        def matrix(layer, w):
            return layer.create_parameter(list(np.shape(w)), default_initializer=nn.initializer.Assign(
                np.asarray(w, np.float32)))

        abs_, elu, bmm, relu = paddle.abs, F.elu, paddle.bmm, F.relu

        def zeros(h):
            return paddle.zeros([1, h], dtype="float32")

        def to_numpy(t):
            return t.numpy()

        def tensor(a):
            return paddle.to_tensor(np.asarray(a))

        seed = paddle.seed

    class RNNAgent(Model):
        def __init__(self, obs_dim: int, n_actions: int, hidden: int = 16):
            super().__init__()
            self.hidden = hidden
            self.fc1 = nn.Linear(obs_dim, hidden)
            self.rnn = nn.GRUCell(hidden, hidden)
            self.fc2 = nn.Linear(hidden, n_actions)

        def init_hidden(self):
            return zeros(self.hidden)

        def forward(self, obs, h):
            h = gru(self.rnn, relu(self.fc1(obs)), h.reshape([-1, self.hidden]))
            return self.fc2(h), h

    class QMixer(Model):
        def __init__(self, n_agents: int, state_dim: int, embed: int = 8, hypernet_embed: int = 16):
            super().__init__()
            self.n_agents, self.state_dim, self.embed = n_agents, state_dim, embed
            self.hyper_w_1 = nn.Sequential(nn.Linear(state_dim, hypernet_embed), nn.ReLU(),
                                           nn.Linear(hypernet_embed, embed * n_agents))
            self.hyper_w_2 = nn.Sequential(nn.Linear(state_dim, hypernet_embed), nn.ReLU(),
                                           nn.Linear(hypernet_embed, embed))
            self.hyper_b_1 = nn.Linear(state_dim, embed)
            self.hyper_b_2 = nn.Sequential(nn.Linear(state_dim, embed), nn.ReLU(), nn.Linear(embed, 1))

        def forward(self, agent_qs, states):
            batch = agent_qs.shape[0]
            states = states.reshape([-1, self.state_dim])
            agent_qs = agent_qs.reshape([-1, 1, self.n_agents])
            w1 = abs_(self.hyper_w_1(states)).reshape([-1, self.n_agents, self.embed])
            b1 = self.hyper_b_1(states).reshape([-1, 1, self.embed])
            w2 = abs_(self.hyper_w_2(states)).reshape([-1, self.embed, 1])
            b2 = self.hyper_b_2(states).reshape([-1, 1, 1])
            hidden = elu(bmm(agent_qs, w1) + b1)
            return (bmm(hidden, w2) + b2).reshape([batch, -1, 1])

    class LinearAgent(Model):
        def __init__(self, w):
            super().__init__()
            self.w = matrix(self, w)

        def init_hidden(self):
            return zeros(1)

        def forward(self, obs, h):
            return obs @ self.w, h.reshape([-1, 1])

    class SumMixer(Model):
        def __init__(self, n_agents: int):
            super().__init__()
            self.n_agents = n_agents

        def forward(self, agent_qs, states):
            return agent_qs.sum(-1, keepdim=True)

    return SimpleNamespace(name=backend, Agent=Agent, RNNAgent=RNNAgent, QMixer=QMixer, LinearAgent=LinearAgent,
                           SumMixer=SumMixer, numpy=to_numpy, tensor=tensor, seed=seed,
                           QMIX=__import__(f"parl_algorithms.{backend}", fromlist=["QMIX"]).QMIX)


def episode_batch(rng: np.random.Generator, batch: int = 4, steps: int = 6, n_agents: int = 2, obs_dim: int = 5,
                  state_dim: int = 7, n_actions: int = 4) -> dict[str, np.ndarray]:
    """A random valid QMIX batch (numpy, PARL's argument names): episodes of random lengths, terminal or
    truncated, padded with filled = 1 (and terminated = 1, zeros, as PARL's train.py), random available
    actions with the chosen ones available."""
    avail = (rng.random((batch, steps, n_agents, n_actions)) < 0.6).astype(np.float32)
    avail[..., 0] = 1.0  # a no-op is always available
    actions = np.zeros((batch, steps, n_agents), np.int64)
    for idx in np.ndindex(batch, steps, n_agents):
        actions[idx] = rng.choice(np.flatnonzero(avail[idx]))
    data = {
        "state_batch": rng.normal(size=(batch, steps, state_dim)).astype(np.float32),
        "actions_batch": actions,
        "reward_batch": rng.normal(size=(batch, steps, 1)).astype(np.float32),
        "terminated_batch": np.zeros((batch, steps, 1), np.float32),
        "obs_batch": rng.normal(size=(batch, steps, n_agents, obs_dim)).astype(np.float32),
        "available_actions_batch": avail,
        "filled_batch": np.zeros((batch, steps, 1), np.float32),
    }
    for b in range(batch):
        length = int(rng.integers(2, steps + 1))
        if length < steps or b % 2 == 0:  # a terminal episode of `length` steps, then padding
            length = min(length, steps - 1)
            data["terminated_batch"][b, length - 1] = 1.0
            data["filled_batch"][b, length:] = 1.0
            data["terminated_batch"][b, length:] = 1.0
            for key in ("state_batch", "obs_batch", "available_actions_batch", "actions_batch", "reward_batch"):
                data[key][b, length:] = 0
    return data
