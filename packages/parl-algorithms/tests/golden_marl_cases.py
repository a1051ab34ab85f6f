"""Golden outputs of the multi-agent algorithms (MADDPG, QMIX, COMA, MAPPO): fixed seeds, small models, a few
``learn`` calls on fixed random batches; the sibling of ``golden_cases.py`` (same digests, same rules).

``run_case(backend, name)`` returns, for one case on one backend: the outputs of each ``learn`` call, the digest
(sha256 of the float32 bytes) and sum of every final weight, the acting methods' outputs on fixed inputs (MADDPG
``predict`` / ``sample`` / ``Q``, QMIX ``predict_local_q``, COMA ``predict`` / ``init_hidden``, MAPPO ``sample`` /
``value`` and PopArt's statistics), ``last_info`` and the checkpoint's entry names. The algorithms are called
directly with numpy batches (one ``learn`` of each case with the backend's tensors), as their agents do.

``golden/record.py marl`` writes them to ``golden/marl-<backend>.json``; ``test_golden_marl_outputs.py`` recomputes
them (:func:`run_all`, in a fresh interpreter) and compares bit for bit. ``write_checkpoints()`` writes, once,
``golden/checkpoints/marl-<backend>-<case>`` (``Agent.save``, and ``pickle.dumps`` of the torch algorithm) and the
record of one more ``learn`` after restoring each (``golden/checkpoints/marl-expected.json``); ``resumed``
recomputes that record.

Everything runs on the CPU with one torch thread: the digests are of this machine's CPU kernels.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import pathlib
import pickle
from types import SimpleNamespace
from typing import Any

import numpy as np
from golden_cases import _arrays, _flat, _numpy, digest
from qmix_models import episode_batch as qmix_batch
from test_algorithms_coma import episode_batch

HERE = pathlib.Path(__file__).resolve().parent
CKPT = HERE / "golden" / "checkpoints"
STEPS = 3


def _backend(backend: str) -> SimpleNamespace:
    """The framework pieces the cases build on: ``Model``, ``Agent``, ``nn``, ``algs``, ``seed``, ``tensor``."""
    if backend == "torch":
        import torch

        import parl_algorithms.torch as algs
        from parl_core.torch import Agent, Model

        def seed(value):
            torch.set_num_threads(1)
            torch.manual_seed(value)

        return SimpleNamespace(name="torch", Model=Model, Agent=Agent, nn=torch.nn, algs=algs, seed=seed,
                               tanh=torch.tanh, cat=lambda xs: torch.cat(xs, -1),
                               zeros=lambda *shape: torch.zeros(*shape),
                               zeros_param=lambda layer, n: torch.nn.Parameter(torch.zeros(n)),
                               tensor=lambda a: torch.as_tensor(np.asarray(a)))
    import paddle

    import parl_algorithms.paddle as algs
    from parl_core.paddle import Agent, Model

    return SimpleNamespace(name="paddle", Model=Model, Agent=Agent, nn=paddle.nn, algs=algs, seed=paddle.seed,
                           tanh=paddle.tanh, cat=lambda xs: paddle.concat(xs, -1),
                           zeros=lambda *shape: paddle.zeros(list(shape)),
                           zeros_param=lambda layer, n: layer.create_parameter(
                               [n], default_initializer=paddle.nn.initializer.Constant(0.0)),
                           tensor=lambda a: paddle.to_tensor(np.asarray(a)))


def _mlp(B, inp, out, hidden=16):
    return B.nn.Sequential(B.nn.Linear(inp, hidden), B.nn.Tanh(), B.nn.Linear(hidden, out))


# -- MADDPG ----------------------------------------------------------------------------------------------------
MADDPG_OBS = (3, 4)
MADDPG_HP = dict(gamma=0.95, tau=0.01, actor_lr=1e-2, critic_lr=1e-2)


def _spaces(kind):
    from gymnasium import spaces

    if kind == "discrete":
        return [spaces.Discrete(3), spaces.Discrete(2)]
    return [spaces.Box(-1.0, 1.0, (2,), np.float32), spaces.Box(0.0, 1.0, (3,), np.float32)]


def _act_dims(act_space):
    return [int(s.n) if hasattr(s, "n") else int(s.shape[0]) for s in act_space]


def _pickled(backend, *classes):
    """Name ``classes`` ``<backend>_<name>`` at this module's top level, so that a pickled algorithm finds them."""
    for cls in classes:
        cls.__module__, cls.__qualname__ = __name__, f"{backend}_{cls.__name__}"
        globals()[cls.__qualname__] = cls
    return classes[-1]


def __getattr__(name):  # a model class named in a pickle, built on first use (PEP 562)
    backend = name.partition("_")[0]
    if backend in ("torch", "paddle"):
        for classes in (_maddpg_model_cls, _qmix_model_cls, _coma_model_cls, _mappo_model_cls):
            classes(backend)
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _maddpg_model_cls(backend):
    B = _backend(backend)

    class MAModel(B.Model):
        def __init__(self, obs_dim, act_dim, critic_in_dim, continuous=False):
            super().__init__()
            self.continuous = continuous
            self.actor = _mlp(B, obs_dim, act_dim)
            if continuous:
                self.log_std = B.nn.Linear(obs_dim, act_dim)
            self.critic = _mlp(B, critic_in_dim, 1)

        def policy(self, obs):
            return (self.actor(obs), self.log_std(obs)) if self.continuous else self.actor(obs)

        def value(self, obs_n, act_n):
            return self.critic(B.cat(list(obs_n) + list(act_n)))

        def get_actor_params(self):
            return list(self.actor.parameters()) + (list(self.log_std.parameters()) if self.continuous else [])

        def get_critic_params(self):
            return self.critic.parameters()

    return _pickled(backend, MAModel)


def _maddpg(B, kind, index):
    act_space = _spaces(kind)
    dims = _act_dims(act_space)
    model = _maddpg_model_cls(B.name)(MADDPG_OBS[index], dims[index], sum(MADDPG_OBS) + sum(dims),
                                      kind == "continuous")
    return B.algs.MADDPG(model, agent_index=index, act_space=act_space, **MADDPG_HP, device="cpu")


def _maddpg_batch(rng, kind, batch=8):
    act_space = _spaces(kind)
    obs_n = [rng.normal(size=(batch, d)).astype(np.float32) for d in MADDPG_OBS]
    act_n = []
    for s in act_space:
        if hasattr(s, "n"):
            act_n.append(np.eye(s.n, dtype=np.float32)[rng.integers(0, s.n, batch)])
        else:
            act_n.append(rng.uniform(-1, 1, (batch, s.shape[0])).astype(np.float32))
    return obs_n, act_n, rng.normal(size=batch).astype(np.float32)


def _maddpg_learn(B, alg, rng, step, kind):
    obs_n, act_n, target_q = _maddpg_batch(rng, kind)
    if step == 1:  # (the backend's tensors once)
        obs_n, act_n, target_q = [B.tensor(x) for x in obs_n], [B.tensor(x) for x in act_n], B.tensor(target_q)
    return alg.learn(obs_n, act_n, target_q)


def _maddpg_acting(B, alg, kind):
    index = alg.agent_index
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(5, MADDPG_OBS[index])).astype(np.float32)
    obs_n, act_n, _ = _maddpg_batch(rng, kind, batch=5)
    B.seed(3)
    return {"predict": _arrays(alg.predict(obs)), "predict_one": _arrays(alg.predict(obs[0])),
            "sample": _arrays(alg.sample(obs)), "sample_target": _arrays(alg.sample(obs, use_target_model=True)),
            "Q": _arrays(alg.Q(obs_n, act_n)), "Q_target": _arrays(alg.Q(obs_n, act_n, use_target_model=True))}


# -- QMIX ------------------------------------------------------------------------------------------------------
QMIX_SIZES = dict(batch=4, steps=6, n_agents=2, obs_dim=5, state_dim=7, n_actions=4)


@functools.cache
def _qmix_model_cls(backend):
    """PARL's QMIX models (``rnn_model.py``, ``qmixer_model.py``), as ``qmix_models.py``'s."""
    B = _backend(backend)
    F = B.nn.functional
    bmm = importlib.import_module(backend).bmm

    class RNNAgent(B.Model):
        def __init__(self, obs_dim, n_actions, hidden=16):
            super().__init__()
            self.hidden = hidden
            self.fc1 = B.nn.Linear(obs_dim, hidden)
            self.rnn = B.nn.GRUCell(hidden, hidden)
            self.fc2 = B.nn.Linear(hidden, n_actions)

        def init_hidden(self):
            return B.zeros(1, self.hidden)

        def forward(self, obs, h):
            h = self.rnn(F.relu(self.fc1(obs)), h.reshape([-1, self.hidden]))
            h = h if B.name == "torch" else h[1]  # (paddle's GRUCell returns (out, h))
            return self.fc2(h), h

    class QMixer(B.Model):
        def __init__(self, n_agents, state_dim, embed=8, hypernet_embed=16):
            super().__init__()
            self.n_agents, self.state_dim, self.embed = n_agents, state_dim, embed
            self.hyper_w_1 = B.nn.Sequential(B.nn.Linear(state_dim, hypernet_embed), B.nn.ReLU(),
                                             B.nn.Linear(hypernet_embed, embed * n_agents))
            self.hyper_w_2 = B.nn.Sequential(B.nn.Linear(state_dim, hypernet_embed), B.nn.ReLU(),
                                             B.nn.Linear(hypernet_embed, embed))
            self.hyper_b_1 = B.nn.Linear(state_dim, embed)
            self.hyper_b_2 = B.nn.Sequential(B.nn.Linear(state_dim, embed), B.nn.ReLU(), B.nn.Linear(embed, 1))

        def forward(self, agent_qs, states):
            batch = agent_qs.shape[0]
            states = states.reshape([-1, self.state_dim])
            agent_qs = agent_qs.reshape([-1, 1, self.n_agents])
            w1 = self.hyper_w_1(states).abs().reshape([-1, self.n_agents, self.embed])
            b1 = self.hyper_b_1(states).reshape([-1, 1, self.embed])
            w2 = self.hyper_w_2(states).abs().reshape([-1, self.embed, 1])
            b2 = self.hyper_b_2(states).reshape([-1, 1, 1])
            hidden = F.elu(bmm(agent_qs, w1) + b1)
            return (bmm(hidden, w2) + b2).reshape([batch, -1, 1])

    return SimpleNamespace(RNNAgent=_pickled(backend, RNNAgent), QMixer=_pickled(backend, QMixer))


def _qmix(B, **kwargs):
    Q = _qmix_model_cls(B.name)
    agent = Q.RNNAgent(QMIX_SIZES["obs_dim"], QMIX_SIZES["n_actions"])
    mixer = Q.QMixer(QMIX_SIZES["n_agents"], QMIX_SIZES["state_dim"])
    return B.algs.QMIX(agent, mixer, gamma=0.9, lr=5e-2, **kwargs, device="cpu")


def _qmix_learn(B, alg, rng, step, kind):
    data = qmix_batch(rng, **QMIX_SIZES)
    if step == 1:
        data = {k: B.tensor(v) for k, v in data.items()}
    out = alg.learn(**data)
    if step == 1:
        alg.sync_target()
    return out


def _qmix_acting(B, alg, kind):
    obs = np.random.default_rng(2).normal(size=(2 * QMIX_SIZES["n_agents"], QMIX_SIZES["obs_dim"]))
    alg._init_hidden_states(2)
    q, hidden = alg.predict_local_q(obs.astype(np.float32), alg.hidden_states)
    q2, hidden2 = alg.predict_local_q(B.tensor(obs.astype(np.float32)), hidden)
    return {"predict_local_q": _arrays((q, hidden, q2, hidden2)), "hidden": _arrays(alg.target_hidden_states)}


# -- COMA ------------------------------------------------------------------------------------------------------
COMA_AGENTS, COMA_ACTIONS, COMA_HIDDEN = 2, 3, 8
COMA_ACTOR_DIM, COMA_CRITIC_DIM = 4 + COMA_ACTIONS + COMA_AGENTS, 6


@functools.cache
def _coma_model_cls(backend):
    B = _backend(backend)

    class ComaActor(B.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = B.nn.Linear(COMA_ACTOR_DIM, COMA_HIDDEN)
            self.rnn_x = B.nn.Linear(COMA_HIDDEN, COMA_HIDDEN)
            self.rnn_h = B.nn.Linear(COMA_HIDDEN, COMA_HIDDEN)
            self.fc2 = B.nn.Linear(COMA_HIDDEN, COMA_ACTIONS)

        def init_hidden(self):
            return B.zeros(1, COMA_HIDDEN)

        def forward(self, obs, h):
            h = B.tanh(self.rnn_x(B.tanh(self.fc1(obs))) + self.rnn_h(h.reshape([-1, COMA_HIDDEN])))
            return self.fc2(h), h

    class ComaCritic(B.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = B.nn.Linear(COMA_CRITIC_DIM, 16)
            self.fc2 = B.nn.Linear(16, COMA_ACTIONS)

        def forward(self, inputs):
            return self.fc2(B.tanh(self.fc1(inputs)))

    class ComaModel(B.Model):
        def __init__(self):
            super().__init__()
            self.n_agents, self.n_actions = COMA_AGENTS, COMA_ACTIONS
            self.actor_model = ComaActor()
            self.critic_model = ComaCritic()

        def policy(self, obs, h):
            return self.actor_model(obs, h)

        def value(self, inputs):
            return self.critic_model(inputs)

        def get_actor_params(self):
            return self.actor_model.parameters()

        def get_critic_params(self):
            return self.critic_model.parameters()

    return _pickled(backend, ComaActor, ComaCritic, ComaModel)


def _coma(B, **kwargs):
    return B.algs.COMA(_coma_model_cls(B.name)(), COMA_ACTIONS, COMA_AGENTS, **kwargs, device="cpu")


def _coma_learn(B, alg, rng, step, kind):
    batch = episode_batch(rng, terminated_last=step % 2 == 0)  # (test_algorithms_coma's: the same sizes)
    if step == 1:
        batch = {k: B.tensor(v) for k, v in batch.items()}
    out = alg.learn(batch, 0.1)
    if step == 0:
        alg.sync_target()
    return out


def _coma_acting(B, alg, kind):
    obs = np.random.default_rng(2).normal(size=(2 * COMA_AGENTS, COMA_ACTOR_DIM)).astype(np.float32)
    hidden = alg.init_hidden(2)
    probs, h = alg.predict(obs, hidden.reshape([2 * COMA_AGENTS, COMA_HIDDEN]))
    probs2, h2 = alg.predict(B.tensor(obs), h)
    return {"predict": _arrays((probs, h, probs2, h2)), "init_hidden": _arrays(alg.init_hidden(3))}


# -- MAPPO -----------------------------------------------------------------------------------------------------
MAPPO_OBS, MAPPO_CENT, MAPPO_HIDDEN, MAPPO_B = 4, 6, 8, 8


@functools.cache
def _mappo_model_cls(backend):
    """PARL's MAPPO model contract: ``actor`` (``multi_discrete`` / ``continuous_action``), ``critic.v_out``."""
    B = _backend(backend)

    class MAPPOActor(B.Model):
        def __init__(self, kind, sizes):
            super().__init__()
            self.sizes = tuple(sizes)
            self.multi_discrete = kind == "multi_discrete"
            self.continuous_action = kind == "continuous"
            self.fc = B.nn.Linear(MAPPO_OBS, MAPPO_HIDDEN)
            self.out = B.nn.Linear(MAPPO_HIDDEN, sum(sizes))
            if self.continuous_action:
                self.log_std = B.zeros_param(self, sizes[0])

        def forward(self, obs):
            out = self.out(B.tanh(self.fc(obs)))
            if self.multi_discrete:
                bounds = np.cumsum((0,) + self.sizes)
                return [out[:, int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
            if self.continuous_action:
                return out, self.log_std.exp()
            return out

    class MAPPOCritic(B.Model):
        def __init__(self):
            super().__init__()
            self.fc = B.nn.Linear(MAPPO_CENT, MAPPO_HIDDEN)
            self.v_out = B.nn.Linear(MAPPO_HIDDEN, 1)

        def forward(self, cent_obs):
            return self.v_out(B.tanh(self.fc(cent_obs)))

    class MAPPOModel(B.Model):
        def __init__(self, kind, sizes):
            super().__init__()
            self.act_dim = list(sizes) if kind == "multi_discrete" else sizes[0]
            self.actor = MAPPOActor(kind, sizes)
            self.critic = MAPPOCritic()

        def policy(self, obs):
            return self.actor(obs)

        def value(self, cent_obs):
            return self.critic(cent_obs)

    return _pickled(backend, MAPPOActor, MAPPOCritic, MAPPOModel)


MAPPO_SIZES = {"discrete": (3,), "multi_discrete": (2, 3), "continuous": (2,)}


def _mappo(B, kind, **kwargs):
    args = dict(clip_param=0.2, value_loss_coef=1.0, entropy_coef=0.01, initial_lr=1e-2, huber_delta=10.0,
                eps=1e-5, max_grad_norm=10.0)
    args.update(kwargs)
    return B.algs.MAPPO(_mappo_model_cls(B.name)(kind, MAPPO_SIZES[kind]), device="cpu", **args)


def _mappo_available(rng, batch=MAPPO_B):
    available = rng.random((batch, 3)) < 0.7
    available[:, 0] = True
    return available


def _mappo_learn(B, alg, rng, step, kind):
    n, sizes = MAPPO_B, MAPPO_SIZES[kind]
    cent = rng.normal(size=(n, MAPPO_CENT)).astype(np.float32)
    obs = rng.normal(size=(n, MAPPO_OBS)).astype(np.float32)
    available = None
    if kind == "discrete":
        available = _mappo_available(rng)
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in available])[:, None]
    elif kind == "multi_discrete":
        actions = np.stack([rng.integers(0, s, n) for s in sizes], 1).astype(np.float32)  # (PARL's buffer: floats)
    else:
        actions = rng.normal(size=(n, sizes[0])).astype(np.float32)
    width = len(sizes) if kind == "multi_discrete" else 1
    args = [cent, obs, actions, rng.normal(size=(n, 1)).astype(np.float32),
            (rng.normal(size=(n, 1)) * 5 + 2).astype(np.float32),
            (rng.normal(size=(n, width)) * 0.1 - 1.0).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32),
            (rng.random((n, 1)) < 0.8).astype(np.float32)]
    if step == 1:
        args = [B.tensor(x) for x in args]
    return alg.learn(*args, available_actions=available)


def _mappo_acting(B, alg, kind):
    rng = np.random.default_rng(2)
    cent = rng.normal(size=(5, MAPPO_CENT)).astype(np.float32)
    obs = rng.normal(size=(5, MAPPO_OBS)).astype(np.float32)
    available = _mappo_available(rng, 5) if kind == "discrete" else None
    B.seed(3)
    acting = {"sample": _arrays(alg.sample(cent, obs, available_actions=available)),
              "sample_deterministic": _arrays(alg.sample(B.tensor(cent), B.tensor(obs), deterministic=True,
                                                         available_actions=available)),
              "value": _arrays(alg.value(cent))}
    if alg.value_normalizer is not None:
        popart = alg.value_normalizer
        acting["popart"] = _arrays((popart.mean, popart.mean_sq, popart.debiasing_term, popart.stddev,
                                    popart.normalize(cent[:, :1]), popart.denormalize(cent[:, :1])))
    return acting


# name -> (build the algorithm on the backend's pieces, one learn call (B, alg, rng, step, kind), acting outputs,
# kind)
CASES: dict[str, tuple[Any, Any, Any, str]] = {
    "MADDPG-discrete": (lambda B: _maddpg(B, "discrete", 0), _maddpg_learn, _maddpg_acting, "discrete"),
    "MADDPG-continuous": (lambda B: _maddpg(B, "continuous", 1), _maddpg_learn, _maddpg_acting, "continuous"),
    "QMIX": (lambda B: _qmix(B, double_q=True, clip_grad_norm=10.0), _qmix_learn, _qmix_acting, ""),
    "QMIX-single-q-unclipped": (lambda B: _qmix(B, double_q=False), _qmix_learn, _qmix_acting, ""),
    "COMA": (lambda B: _coma(B, grad_norm_clip=10.0, actor_lr=1e-2, critic_lr=1e-2, gamma=0.9, td_lambda=0.8,
                             entropy_coeff=0.01), _coma_learn, _coma_acting, ""),
    "COMA-parl-config": (lambda B: _coma(B), _coma_learn, _coma_acting, ""),
    "MAPPO-discrete": (lambda B: _mappo(B, "discrete"), _mappo_learn, _mappo_acting, "discrete"),
    "MAPPO-multi-discrete": (lambda B: _mappo(B, "multi_discrete", use_value_active_masks=False), _mappo_learn,
                             _mappo_acting, "multi_discrete"),
    "MAPPO-continuous": (lambda B: _mappo(B, "continuous", use_popart=False, max_grad_norm=None), _mappo_learn,
                         _mappo_acting, "continuous"),
}


def _weights(alg):
    return {f"{key}.{param}": {"digest": digest(value), "sum": float(value.astype(np.float64).sum())}
            for key, params in sorted(alg.get_all_weights().items()) for param, value in sorted(params.items())}


def _info(alg):
    return {key: float(value) if math.isfinite(value) else repr(float(value))
            for key, value in sorted(alg.get_info().items())}


def run_case(backend: str, name: str) -> dict[str, Any]:
    """The golden record of case ``name`` on ``backend`` (see the module docstring)."""
    B = _backend(backend)
    build, learn, acting, kind = CASES[name]
    B.seed(0)
    alg = build(B)
    B.seed(1)
    rng = np.random.default_rng(0)
    outputs = [[float(_numpy(x)) for x in _flat(learn(B, alg, rng, step, kind))] for step in range(STEPS)]
    return {"learn": outputs, "info": _info(alg), "weights": _weights(alg), **acting(B, alg, kind),
            "checkpoint": sorted(alg.state_dict())}


# -- checkpoints written by the two-tree code -------------------------------------------------------------------
# (a paddle algorithm does not pickle: its tensors hold programs)
KINDS = {"torch": ("ckpt", "pkl"), "paddle": ("ckpt",)}


def _resume_step(B, name, alg):
    """One learn on a fixed batch with fixed noise after a restore; the record compared bit for bit."""
    _, learn, _, kind = CASES[name]
    B.seed(5)
    out = _flat(learn(B, alg, np.random.default_rng(7), 2, kind))
    return {"learn": [float(_numpy(x)) for x in out], "weights": _weights(alg)}


def resumed(backend: str, name: str, kind: str) -> dict[str, Any]:
    """The record of one learn after restoring ``marl-<backend>-<name>.<kind>`` (``ckpt`` or ``pkl``)."""
    B = _backend(backend)
    path = CKPT / f"marl-{backend}-{name}.{kind}"
    if kind == "ckpt":
        B.seed(0)
        alg = CASES[name][0](B)
        B.Agent(alg).restore(str(path))
    else:
        alg = pickle.loads(path.read_bytes())
    return _resume_step(B, name, alg)


def write_checkpoints(*names: str) -> None:
    """Write the checkpoints and records of the cases ``names`` (default: every case), keeping the others'."""
    names = names or tuple(CASES)
    CKPT.mkdir(parents=True, exist_ok=True)
    for backend in KINDS:
        B = _backend(backend)
        for name in names:
            build, learn, _, kind = CASES[name]
            B.seed(0)
            alg = build(B)
            rng = np.random.default_rng(3)
            for step in (0, 2):
                learn(B, alg, rng, step, kind)
            B.Agent(alg).save(str(CKPT / f"marl-{backend}-{name}.ckpt"))
            if "pkl" in KINDS[backend]:
                (CKPT / f"marl-{backend}-{name}.pkl").write_bytes(pickle.dumps(alg))
    path = CKPT / "marl-expected.json"
    expected = json.loads(path.read_text()) if path.exists() else {}
    expected.update({f"{b}-{n}.{k}": resumed(b, n, k) for b in KINDS for n in names for k in KINDS[b]})
    path.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


def run_all(backend: str) -> dict[str, Any]:
    """Every case's record on ``backend``, in :data:`CASES` order (as ``golden/record.py marl`` records them)."""
    return {name: run_case(backend, name) for name in CASES}


def resume_all(backend: str) -> dict[str, Any]:
    """The record of every checkpoint file of ``backend`` (``<backend>-<case>.<kind>``), in the order written."""
    return {f"{backend}-{name}.{kind}": resumed(backend, name, kind) for name in CASES for kind in KINDS[backend]
            if (CKPT / f"marl-{backend}-{name}.{kind}").exists()}


def checkpoint_files() -> list[str]:
    """The recorded checkpoint files, ``<backend>-<case>.<kind>``."""
    path = CKPT / "marl-expected.json"
    return sorted(json.loads(path.read_text())) if path.exists() else []
