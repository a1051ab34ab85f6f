"""The few framework operations parl-core's tests need, one object per backend.

Each test body is written once against this interface and runs on torch and on paddle (the ``backend``
fixture of ``conftest.py``); only framework vocabulary differs here, never what a test asserts.
"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

BACKEND_NAMES = ("torch", "paddle")


def _torch() -> SimpleNamespace:
    import torch

    import parl_core.torch as core

    nn = torch.nn
    return SimpleNamespace(
        name="torch", core=core, torch=torch, Layer=nn.Module, ext="pt",
        Linear=nn.Linear, BatchNorm1d=nn.BatchNorm1d, tanh=torch.tanh, relu=torch.relu,
        linear_weight_shape=lambda i, o: (o, i),  # torch stores [out, in]
        bn_buffers=("running_mean", "running_var", "num_batches_tracked"),
        seed=torch.manual_seed, randn=lambda *shape: torch.randn(*shape),
        adam=lambda params, lr: torch.optim.Adam(params, lr=lr),
        no_grad=torch.no_grad, grad_enabled=torch.is_grad_enabled, to_tensor=torch.as_tensor,
        fill_=lambda t, v: t.data.fill_(v), add_=lambda t, v: t.data.add_(v),
        numpy=lambda t: t.detach().cpu().numpy(),
        load=lambda path: torch.load(path, weights_only=True), save=torch.save,
        load_state_dict=lambda model, state: model.load_state_dict(state),
        dtype_name=lambda t: str(t.dtype).replace("torch.", ""),
        gather_action=lambda q, a: q.gather(1, a.long().unsqueeze(1)).squeeze(1),
        argmax=lambda q: q.argmax(dim=-1),
        step=lambda opt, loss: (opt.zero_grad(), loss.backward(), opt.step()),
        trainable=lambda model: list(model.named_parameters()),
    )


def _paddle() -> SimpleNamespace:
    import paddle

    import parl_core.paddle as core

    nn = paddle.nn

    def step(opt, loss):
        opt.clear_grad()
        loss.backward()
        opt.step()

    def fill_(t, v):
        t.set_value(np.full(t.shape, v, dtype=t.numpy().dtype))

    return SimpleNamespace(
        name="paddle", core=core, paddle=paddle, Layer=nn.Layer, ext="pdparams",
        Linear=nn.Linear, BatchNorm1d=nn.BatchNorm1D, tanh=paddle.tanh, relu=paddle.nn.functional.relu,
        linear_weight_shape=lambda i, o: (i, o),  # paddle stores [in, out]
        bn_buffers=("_mean", "_variance"),
        seed=paddle.seed, randn=lambda *shape: paddle.randn(list(shape)),
        adam=lambda params, lr: paddle.optimizer.Adam(learning_rate=lr, parameters=list(params)),
        no_grad=paddle.no_grad, grad_enabled=paddle.is_grad_enabled, to_tensor=paddle.to_tensor,
        fill_=fill_, add_=lambda t, v: t.set_value(t.numpy() + v),
        numpy=lambda t: t.numpy(),
        load=paddle.load, save=paddle.save,
        load_state_dict=lambda model, state: model.set_state_dict(state),
        dtype_name=lambda t: str(t.dtype).replace("paddle.", ""),
        gather_action=lambda q, a: paddle.take_along_axis(q, a.astype("int64").unsqueeze(1), axis=1).squeeze(1),
        argmax=lambda q: q.argmax(axis=-1),
        step=step,
        trainable=lambda model: [(n, p) for n, p in model.named_parameters() if p.trainable],
    )


_FACTORIES = {"torch": _torch, "paddle": _paddle}
_CACHE: dict[str, SimpleNamespace] = {}


def load_backend(name: str) -> SimpleNamespace:
    """The namespace of one backend; skips the test when that framework is not installed."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install 'parl-core[{name}]')")
    if name not in _CACHE:
        _CACHE[name] = _FACTORIES[name]()
    return _CACHE[name]
