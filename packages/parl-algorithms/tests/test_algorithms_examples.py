"""Each example as a real subprocess: a tiny budget (summary.json and tensorboard events are written with
sane values), and learn-to-threshold runs marked slow with bars reached in seconds."""

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def run_example(name, logdir, *args, timeout=300):
    cmd = [sys.executable, str(EXAMPLES / name / "train.py"), "--seed", "0", "--logdir", str(logdir),
           "--no-progress", *args]
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT), env=env)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    with open(Path(logdir) / "summary.json") as f:
        result = json.load(f)
    assert result == json.loads(proc.stdout.strip().splitlines()[-1])  # printed and written alike
    return result


def sigterm_when(proc, ready, timeout_s, what, output=lambda: "", tail=3000):
    """Polls ``ready()`` every 50 ms while ``proc`` (a ``subprocess.Popen`` of an example) runs, then sends it
    SIGTERM (the examples' signal to save a checkpoint and stop).

    Raises:
        AssertionError: ``proc`` exited first (the last ``tail`` characters of ``output()`` in the message), or
            ``ready()`` stayed false for ``timeout_s`` seconds (``"no <what> within <timeout_s> s"``).
    """
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, output()[-tail:]
        assert time.monotonic() < deadline, f"no {what} within {timeout_s:g} s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)


def check_summary(result, env_steps):
    assert result["eval_episodes"] == 10
    assert math.isfinite(result["eval_return_mean"])
    assert result["env_steps"] == env_steps
    assert result["wall_s"] > 0


TINY = {
    # name: (args, expected env_steps, eval-return range)
    "ppo": (["--total-steps", "512"], 512, (8.0, 500.0)),
    "ppo-pendulum": (["--env", "Pendulum-v1", "--total-steps", "2048"], 2048, (-2000.0, 0.0)),
    "a2c": (["--total-steps", "512"], 512, (8.0, 500.0)),
    "dqn": (["--total-steps", "1300"], 1300, (8.0, 500.0)),
    "dqn-double-dueling": (["--total-steps", "1300", "--double", "--dueling"], 1300, (8.0, 500.0)),
    "sac": (["--total-steps", "1100", "--learning-starts", "1000", "--eval-every", "100"], 1100, (-2000.0, 0.0)),
    "td3": (["--total-steps", "1100", "--learning-starts", "1000", "--eval-every", "100"], 1100, (-2000.0, 0.0)),
    "ddpg": (["--total-steps", "1100", "--learning-starts", "1000", "--eval-every", "100"], 1100, (-2000.0, 0.0)),
}
BACKENDS = ("torch", "paddle")


def _learner_device() -> str:
    """``cuda`` where torch sees a GPU (the tiny runs then train on it), else ``cpu``."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _backend_args(backend: str) -> list[str]:
    """``--backend`` and, on torch, ``--device`` (cuda where torch sees a GPU); paddle keeps its current device
    (the CPU wheel of constraints.txt has no CUDA). Skips when the framework is not installed."""
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (pip install 'parl-algorithms[{backend}]')")
    return ["--backend", backend, *(["--device", _learner_device()] if backend == "torch" else [])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(TINY))
def test_example_tiny_budget(case, backend, tmp_path):
    args, steps, (low, high) = TINY[case]
    result = run_example(case.split("-")[0], tmp_path, *args, *_backend_args(backend), "--target-return", "1e9")
    check_summary(result, steps)
    assert result["backend"] == backend
    assert result["device"].split(":")[0] == (_learner_device() if backend == "torch" else "cpu")
    if case == "dqn-double-dueling":
        assert result["algorithm"] == "DDQN" and result["dueling"] is True
    assert low <= result["eval_return_mean"] <= high
    assert result["reached"] is False
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())


@pytest.mark.parametrize("backend", BACKENDS)
def test_cql_example_tiny_budget(backend, tmp_path):
    result = run_example("cql", tmp_path, *_backend_args(backend), "--collect-steps", "400",
                         "--learning-starts", "200", "--gradient-steps", "20", "--eval-every", "10",
                         "--policy-eval-start", "5", "--target-return", "1e9")
    check_summary(result, 400)
    assert result["backend"] == backend
    assert result["dataset_size"] == 400 and result["gradient_steps"] == 20
    assert -2000.0 <= result["dataset_return_mean"] <= 0.0
    assert (tmp_path / "dataset.npz").is_file()
    # the saved dataset is reusable: train from it without collecting
    again = run_example("cql", tmp_path / "reuse", *_backend_args(backend), "--dataset", str(tmp_path / "dataset.npz"),
                        "--dataset-return", str(result["dataset_return_mean"]), "--gradient-steps", "10",
                        "--eval-every", "10", "--target-return", "1e9")
    assert again["dataset_size"] == 400 and again["env_steps"] == 0


# Learn-to-threshold (one seed each; the full 5-seed runs are in the examples' READMEs / benchmarks).
SLOW = {
    "ppo": (["--target-return", "475"], 475.0, 100_000),
    "ppo-pendulum": (["--env", "Pendulum-v1", "--target-return", "-250"], -250.0, 200_000),
    "a2c": (["--target-return", "475"], 475.0, 500_000),
    "dqn": (["--target-return", "475"], 475.0, 50_000),
    "sac": (["--target-return", "-200"], -200.0, 20_000),
    "td3": (["--target-return", "-200"], -200.0, 20_000),
    "ddpg": (["--target-return", "-200"], -200.0, 20_000),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_example_reaches_threshold(name, tmp_path):
    args, bar, max_steps = SLOW[name]
    result = run_example(name.split("-")[0], tmp_path, *args, timeout=600)
    assert result["reached"] is True, result
    assert result["eval_return_mean"] >= bar
    assert result["env_steps"] <= max_steps
