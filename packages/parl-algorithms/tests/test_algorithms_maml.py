"""MAML / MAML++ (parl_algorithms.torch.maml) and the sine tasks: sampler ranges and shapes, one inner step
against a hand-computed SGD step, first- vs second-order meta-gradients against plain autograd, the learnable
per-step learning rates' gradients, the MSL / cosine / DA schedules, bad input; examples/maml as a subprocess
with a tiny budget (summary.json, curve.csv, --restore, a bad flag)."""

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from parl_algorithms.sine_tasks import SineTaskDistribution
from parl_algorithms.torch.maml import MAML, multi_step_loss_weights
from parl_core.torch import Model

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "maml" / "train.py"


class Net(Model):
    def __init__(self, hidden=8):
        super().__init__()
        self.fc1 = nn.Linear(1, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def tasks(num_tasks=4, support=5, query=7, seed=0):
    t = SineTaskDistribution().sample(num_tasks, support, query, np.random.default_rng(seed))
    return [torch.from_numpy(a) for a in (t.x_support, t.y_support, t.x_query, t.y_query)]


def manual_meta_grads(model, lr, steps, xs, ys, xq, yq, create_graph):
    """The meta-gradient of the mean query MSE after ``steps`` SGD steps, task by task with autograd."""
    params = list(model.parameters())
    total = 0.0
    for t in range(len(xs)):
        p = params
        for _ in range(steps):
            loss = torch.nn.functional.mse_loss(
                torch.func.functional_call(
                    model, dict(zip(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"], p, strict=True)), (xs[t],)
                ),
                ys[t],
            )
            g = torch.autograd.grad(loss, p, create_graph=create_graph)
            p = [w - lr * gi for w, gi in zip(p, g, strict=True)]
        out = torch.func.functional_call(
            model, dict(zip(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"], p, strict=True)), (xq[t],)
        )
        total = total + torch.nn.functional.mse_loss(out, yq[t])
    return torch.autograd.grad(total / len(xs), params)


def test_sine_sampler_ranges_and_shapes():
    dist = SineTaskDistribution()
    t = dist.sample(2000, 5, 10, np.random.default_rng(1))
    assert t.x_support.shape == (2000, 5, 1) and t.y_query.shape == (2000, 10, 1)
    assert t.x_support.dtype == np.float32 and len(t) == 2000
    assert 0.1 <= t.amplitude.min() and t.amplitude.max() <= 5.0 and t.amplitude.max() > 4.9
    assert 0.0 <= t.phase.min() and t.phase.max() <= math.pi
    assert 0.8 <= t.frequency.min() and t.frequency.max() <= 1.2
    x = np.concatenate([t.x_support, t.x_query], 1)
    assert -5.0 <= x.min() < -4.99 and 4.99 < x.max() <= 5.0
    expect = t.amplitude[:, None] * np.sin(t.frequency[:, None] * t.x_query[..., 0] + t.phase[:, None])
    np.testing.assert_allclose(t.y_query[..., 0], expect, rtol=1e-5, atol=1e-5)
    # re-splitting keeps each task's points and its function
    r = dist.resplit(t[:3], 5, np.random.default_rng(2))
    before = np.sort(np.concatenate([t.x_support[:3], t.x_query[:3]], 1)[..., 0], 1)
    after = np.sort(np.concatenate([r.x_support, r.x_query], 1)[..., 0], 1)
    np.testing.assert_array_equal(before, after)
    assert not np.array_equal(r.x_support, t.x_support[:3])


def test_sine_sampler_bad_input():
    with pytest.raises(ValueError, match="low <= high"):
        SineTaskDistribution(amplitude=(5.0, 0.1))
    with pytest.raises(ValueError, match="num_support must be an integer >= 1"):
        SineTaskDistribution().sample(3, 0, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="default_rng"):
        SineTaskDistribution().sample(3, 5, 5, 0)


def test_one_inner_step_is_a_hand_computed_sgd_step():
    torch.manual_seed(0)
    model = Net()
    alg = MAML(model, inner_lr=0.1, num_inner_steps=1, device="cpu")
    xs, ys, xq, _ = tasks(num_tasks=2)
    pred = alg.adapt_predict(xs, ys, xq)
    for t in range(2):
        # d/dW of mean((w2 tanh(W1 x + b1) + b2 - y)^2) written out
        w1, b1, w2, b2 = (p.detach() for p in model.parameters())
        h = torch.tanh(xs[t] @ w1.T + b1)
        err = 2 * (h @ w2.T + b2 - ys[t]) / len(ys[t])  # [K, 1]
        g_w2, g_b2 = err.T @ h, err.sum(0)
        dh = (err @ w2) * (1 - h**2)
        g_w1, g_b1 = dh.T @ xs[t], dh.sum(0)
        w1, b1, w2, b2 = w1 - 0.1 * g_w1, b1 - 0.1 * g_b1, w2 - 0.1 * g_w2, b2 - 0.1 * g_b2
        expect = torch.tanh(xq[t] @ w1.T + b1) @ w2.T + b2
        torch.testing.assert_close(pred[t], expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("first_order", [False, True])
def test_meta_gradient_matches_autograd(first_order):
    torch.manual_seed(1)
    model = Net()
    alg = MAML(model, inner_lr=0.05, num_inner_steps=2, meta_lr=1e-3, first_order=first_order, device="cpu")
    data = tasks(num_tasks=3, seed=3)
    expect = manual_meta_grads(model, 0.05, 2, *data, create_graph=not first_order)
    other = manual_meta_grads(model, 0.05, 2, *data, create_graph=first_order)
    alg.optimizer.step = lambda: None  # keep the weights: compare the gradients
    loss = alg.learn(*data)
    got = [p.grad for p in model.parameters()]
    for g, e in zip(got, expect, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-6)
    assert max((g - o).abs().max() for g, o in zip(got, other, strict=True)) > 1e-4  # first and second order differ
    assert loss.shape == () and alg.last_info["train/second_order"] == float(not first_order)


def test_derivative_order_annealing_switches_at_epoch():
    alg = MAML(Net(), num_inner_steps=2, first_order_epochs=3, device="cpu")
    assert [alg.is_second_order(e) for e in range(5)] == [False, False, False, True, True]
    assert not MAML(Net(), first_order=True, device="cpu").is_second_order(100)


def test_learnable_per_step_lrs_get_gradients_and_move():
    torch.manual_seed(2)
    alg = MAML(Net(), inner_lr=0.01, num_inner_steps=3, learnable_inner_lr=True, multi_step_loss_epochs=5, device="cpu")
    assert alg.inner_lrs.shape == (3, 4) and alg.inner_lrs.requires_grad
    assert any(p is alg.inner_lrs for g in alg.optimizer.param_groups for p in g["params"])
    before = alg.inner_lrs.detach().clone()
    alg.learn(*tasks(), epoch=0)
    assert alg.inner_lrs.grad is not None and (alg.inner_lrs.grad != 0).all()  # every step, every tensor (MSL)
    assert not torch.equal(before, alg.inner_lrs.detach())
    fixed = MAML(Net(), num_inner_steps=3, device="cpu")
    assert not fixed.inner_lrs.requires_grad
    fixed.learn(*tasks())
    assert fixed.inner_lrs.grad is None and torch.all(fixed.inner_lrs == 0.01)


def test_schedules():
    assert multi_step_loss_weights(3, 0, 10) == pytest.approx([1 / 3] * 3)
    w = multi_step_loss_weights(3, 5, 10)
    assert w == pytest.approx([1 / 3 - 5 / 30, 1 / 3 - 5 / 30, 1 - 2 * (1 / 3 - 5 / 30)])
    assert multi_step_loss_weights(3, 50, 10)[:2] == pytest.approx([0.01, 0.01]) and sum(w) == pytest.approx(1)
    alg = MAML(Net(), num_inner_steps=3, multi_step_loss_epochs=10, total_epochs=80, meta_lr=1e-3, device="cpu")
    assert alg.step_weights(10) == [0.0, 0.0, 1.0]
    assert alg.meta_lr_at(0) == pytest.approx(1e-3) and alg.meta_lr_at(80) == pytest.approx(1e-5)
    assert alg.meta_lr_at(40) == pytest.approx((1e-3 + 1e-5) / 2)
    alg.learn(*tasks(), epoch=40)
    assert alg.optimizer.param_groups[0]["lr"] == pytest.approx((1e-3 + 1e-5) / 2)


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="num_inner_steps must be a positive integer"):
        MAML(Net(), num_inner_steps=0, device="cpu")
    with pytest.raises(ValueError, match="min_meta_lr"):
        MAML(Net(), meta_lr=1e-6, min_meta_lr=1e-5, device="cpu")

    class Bad(Net):
        def inner_parameter_names(self):
            return ["fc3.weight"]

    with pytest.raises(ValueError, match="not parameters of the model"):
        MAML(Bad(), device="cpu")
    alg = MAML(Net(), device="cpu")
    xs, ys, xq, yq = tasks()
    with pytest.raises(ValueError, match=r"x\[\.\.\., None\]"):
        alg.learn(xs[..., 0], ys, xq, yq)
    with pytest.raises(ValueError, match="same number of tasks"):
        alg.learn(xs[:2], ys, xq, yq)


def run_example(logdir, *args, expect=0):
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--logdir",
            str(logdir),
            "--no-progress",
            "--seed",
            "0",
            "--epochs",
            "2",
            "--iters-per-epoch",
            "3",
            "--test-tasks",
            "100",
            "--train-tasks",
            "32",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert proc.returncode == expect, f"exit {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_example_tiny_run_and_restore(tmp_path):
    proc = run_example(tmp_path / "a", "--algo", "maml++", "--per-step-bn")
    result = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert result == json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["algo"] == "maml++" and result["meta_updates"] == 6 and result["test_tasks"] == 100
    assert result["per_step_bn"] and np.isfinite(result["test_mse"]) and 0 < result["test_mse"] < 50
    assert np.asarray(result["inner_lr_final"]).shape == (3, 8)  # learnable: 4 linear layers x (W, b) per step
    rows = list(csv.DictReader(open(tmp_path / "a" / "curve.csv")))
    assert [int(r["meta_updates"]) for r in rows] == [3, 6]
    assert float(rows[-1]["test_mse"]) == pytest.approx(result["test_mse"])
    # resuming the finished run from its checkpoint trains no more and reports the same test MSE
    proc = run_example(
        tmp_path / "b", "--algo", "maml++", "--per-step-bn", "--restore", str(tmp_path / "a" / "checkpoint.pt")
    )
    resumed = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert resumed["test_mse"] == pytest.approx(result["test_mse"])


def test_example_bad_flags(tmp_path):
    proc = run_example(tmp_path, "--inner-steps", "0", expect=2)
    assert "--inner-steps must be >= 1" in proc.stderr
    proc = run_example(tmp_path, "--restore", str(tmp_path / "missing.pt"), expect=2)
    assert "no such file" in proc.stderr
