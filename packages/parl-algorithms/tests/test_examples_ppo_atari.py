"""examples/ppo on Atari (PARL's benchmark/torch/ppo atari_config): tiny EnvPool runs as real subprocesses, the
model's layout, a resumed run, the refusals that name the fix."""

from __future__ import annotations

import csv
import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("envpool")
pytest.importorskip("ale_py")

ROOT = Path(__file__).resolve().parents[3]
TRAIN = ROOT / "examples" / "ppo" / "train.py"
pytestmark = pytest.mark.timeout(300)


def _train_module():
    spec = importlib.util.spec_from_file_location("ppo_train_atari_test", TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TRAIN), "--no-progress", *args], capture_output=True, text=True,
                          timeout=240, cwd=str(ROOT))


def test_parl_atari_model_layout_and_init():
    import torch

    train = _train_module()
    model = train.atari_model(6)
    assert sum(p.numel() for p in model.parameters()) == 1_687_719  # the Nature CNN, 6 actions (Pong)
    with torch.no_grad():
        logits, value = model.policy_and_value(torch.zeros(3, 4, 84, 84, dtype=torch.uint8).float() + 128)
    assert logits.shape == (3, 6) and value.shape == (3, 1)
    assert float(logits.abs().max()) < 0.1  # policy head gain 0.01: a near-uniform first policy
    assert torch.equal(model.policy(torch.full((1, 4, 84, 84), 7.0)), model.policy_and_value(
        torch.full((1, 4, 84, 84), 7.0))[0])
    cfg = train.CONFIGS["PongNoFrameskip-v4"]
    assert (cfg["num_envs"], cfg["n_steps"], cfg["epochs"], cfg["num_envs"] * cfg["n_steps"] // cfg["minibatch_size"],
            cfg["lr"], cfg["clip_param"], cfg["entropy_coef"]) == (8, 128, 4, 4, 2.5e-4, 0.1, 0.01)


def test_tiny_pong_run_stopped_by_sigterm_then_resumed(tmp_path):
    logdir = tmp_path / "pong"
    cmd = [sys.executable, str(TRAIN), "--no-progress", "--env", "PongNoFrameskip-v4", "--seed", "0", "--total-steps",
           "3072", "--checkpoint-every", "0.001", "--logdir", str(logdir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    deadline = time.monotonic() + 180
    while not (logdir / "checkpoint.npz").exists():  # written after the first update
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 180 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stderr = proc.communicate(timeout=120)[1]
    assert proc.returncode in (0, 128 + signal.SIGTERM), stderr[-3000:]  # (0: it had finished first)
    done = subprocess.run([*cmd[:-2], "--resume", str(logdir)], capture_output=True, text=True, timeout=240,
                          cwd=str(ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((logdir / "summary.json").read_text())
    assert (summary["env_steps"], summary["updates"], summary["eval_source"]) == (3072, 3, "train_episodes")
    with open(logdir / "curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["env_steps"]) for r in rows] == [1024, 2048, 3072]
    assert "NaN or Inf" not in stderr + done.stderr  # no return is logged before a game has ended


def test_atari_needs_the_torch_backend():
    done = _run("--env", "PongNoFrameskip-v4", "--backend", "paddle", "--total-steps", "1024")
    assert done.returncode == 2 and "use --backend torch" in done.stderr


def test_atari_rollout_is_uint8_frames_and_every_step_is_learned(tmp_path, monkeypatch):
    """EnvPool resets a finished game in the same step: no transition is masked out, and the frames are stored as
    the uint8 [T, N, 4, 84, 84] they are (4x less memory than float32)."""
    from parl_algorithms.torch import PPO

    train = _train_module()
    seen = {}
    real_learn = PPO.learn

    def spy(self, obs, *rest, **kw):
        seen.setdefault("obs", []).append((obs.dtype, tuple(obs.shape)))
        return real_learn(self, obs, *rest, **kw)

    monkeypatch.setattr(PPO, "learn", spy)  # (the example uses torch's PPO whatever backend this process selected)
    monkeypatch.setattr(sys, "argv", ["train.py", "--env", "PongNoFrameskip-v4", "--total-steps", "1024",
                                      "--logdir", str(tmp_path / "r"), "--no-progress"])
    train.main()
    import torch

    assert len(seen["obs"]) == 4 * 4  # 4 epochs x 4 minibatches of 256: all 1,024 steps, none masked
    assert all(dtype == torch.uint8 and shape == (256, 4, 84, 84) for dtype, shape in seen["obs"])
    assert np.isfinite(json.loads((tmp_path / "r" / "summary.json").read_text())["env_steps"])
