"""Exact resume of the single-process examples: a run killed with SIGKILL at a random moment after its first
checkpoint and continued with ``--resume`` ends with the summary.json, curve.csv and final checkpoint
(networks, optimizers, replay memory, counters, RNGs) of the uninterrupted run, bit for bit (timing aside)."""

import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from parl_core.utils.run import CHECKPOINT_FILE, read_checkpoint

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
TIMING = {"wall_s", "train_wall_s", "cpu_s", "collect_s", "learn_s", "actors_ready_s", "env_steps_per_s",
          "steps_per_s", "loadavg", "resumed", "tstart"}
PATHS = {"checkpoint"}  # (summary fields naming a file in the run's own folder)

CASES = {
    # name: (example folder, args on a tiny budget)
    "a2c": ("a2c", ["--total-steps", "6400"]),
    "coma": ("coma", ["--total-steps", "1500", "--num-envs", "2", "--eval-every", "500", "--eval-episodes", "3"]),
    "cql": ("cql", ["--collect-steps", "400", "--learning-starts", "200", "--gradient-steps", "300",
                    "--policy-eval-start", "100", "--eval-every", "100"]),
    "dqn": ("dqn", ["--total-steps", "2400"]),
    "dqn-paddle": ("dqn", ["--total-steps", "2400", "--backend", "paddle"]),
    "dqn_variants-minatar": ("dqn_variants", ["--env", "MinAtar/Breakout-v1", "--total-steps", "2000",
                                              "--warmup-size", "500", "--eval-every", "1000", "--eval-episodes", "2",
                                              "--memory-size", "5000"]),
    "dt": ("dt", ["--collect-steps", "400", "--learning-starts", "350", "--gradient-steps", "200",
                  "--eval-every", "200", "--target-return", "1e9"]),
    "iql": ("iql", ["--collect-steps", "400", "--learning-starts", "200", "--gradient-steps", "600",
                    "--eval-every", "100", "--target-return", "1e9"]),
    "maddpg": ("maddpg", ["--total-steps", "1600", "--learning-starts", "400", "--eval-every", "800",
                          "--eval-episodes", "2", "--final-eval-episodes", "2"]),
    "maml": ("maml", ["--epochs", "4", "--iters-per-epoch", "30", "--train-tasks", "64", "--test-tasks", "100"]),
    "mappo": ("mappo", ["--total-steps", "1600", "--num-envs", "4", "--unroll-length", "12", "--eval-every", "400",
                        "--eval-episodes", "2"]),  # (12-step unrolls: checkpoints in the middle of 25-step episodes)
    "oac": ("oac", ["--total-steps", "900", "--learning-starts", "300", "--eval-every", "300"]),
    "ppo": ("ppo", ["--total-steps", "2560"]),
    "ppo-pendulum": ("ppo", ["--env", "Pendulum-v1", "--total-steps", "6144"]),
    "qmix": ("qmix", ["--total-steps", "2000", "--eval-every", "500", "--eval-episodes", "3", "--envs-per-actor", "3",
                      "--batch-size", "4", "--target-update-interval", "10"]),
    "quickstart": ("quickstart", ["--max-episodes", "60"]),
    "sac": ("sac", ["--total-steps", "900", "--learning-starts", "300", "--eval-every", "300"]),
    "td3": ("td3", ["--total-steps", "900", "--learning-starts", "300", "--eval-every", "300"]),
    "ddpg": ("ddpg", ["--total-steps", "900", "--learning-starts", "300", "--eval-every", "300"]),
}


def _command(folder, logdir, args, *extra):
    return [sys.executable, str(EXAMPLES / folder / "train.py"), "--seed", "0", "--logdir", str(logdir),
            "--no-progress", *args, *extra]


def _env():
    return dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def _run(cmd, timeout=300):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT), env=_env())
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"


def _kill_after_first_checkpoint(cmd, path, max_delay_s, deadline_s=240.0, signum=signal.SIGKILL):
    """Start ``cmd``, wait (polling, with a deadline) until ``path`` exists, then send it ``signum`` at a random
    moment within ``max_delay_s`` seconds.

    Returns:
        whether the signal ended the process before it finished on its own (SIGKILL: killed; SIGTERM: the
        example saved a checkpoint and exited with status 128 + 15).
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(ROOT), env=_env())
    deadline = time.monotonic() + deadline_s
    try:
        while not path.exists():
            if proc.poll() is not None:
                pytest.fail(f"{cmd} ended before its first checkpoint:\n{proc.stderr.read().decode()[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no checkpoint {path} within {deadline_s} s")
            time.sleep(0.01)
        kill_at = time.monotonic() + random.uniform(0.0, max_delay_s)
        while time.monotonic() < kill_at and proc.poll() is None:
            time.sleep(0.01)
        if proc.poll() is None:
            proc.send_signal(signum)
    finally:
        proc.wait(timeout=120)
        proc.stderr.close()
    return proc.returncode == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signum)


def _curve(logdir):
    with open(logdir / "curve.csv", newline="") as f:
        return [{k: v for k, v in row.items() if k not in TIMING} for row in csv.DictReader(f)]


def _summary(logdir):
    with open(logdir / "summary.json") as f:
        return {k: v for k, v in json.load(f).items() if k not in TIMING | PATHS}


def _assert_same(a, b, where="checkpoint"):
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            if k == "spaces" or k in TIMING:  # (clocks; env.reset(seed=...) leaves the spaces' generators unseeded,
                continue                         # and no example samples them)
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or hasattr(a, "numpy"):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert a.tobytes() == b.tobytes(), f"{where}: values differ"
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", sorted(CASES))
def test_killed_run_resumes_bit_exact(case, tmp_path):
    _check_resume(case, tmp_path, signal.SIGKILL)


@pytest.mark.timeout(600)
def test_sigterm_saves_exits_and_resumes_bit_exact(tmp_path):
    """SIGTERM (a scheduler's pre-emption) makes the example save at its next step and exit with 143."""
    _check_resume("dqn", tmp_path, signal.SIGTERM)


def _check_resume(case, tmp_path, signum):
    folder, args = CASES[case]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    _run(_command(folder, straight, args))
    with open(straight / "summary.json") as f:
        wall_s = json.load(f)["wall_s"]  # (the kill comes within the first 30 % of a run's time after its checkpoint)
    for attempt in range(4):  # (a run that finished before the kill is started over, to be killed sooner)
        shutil.rmtree(killed, ignore_errors=True)
        if _kill_after_first_checkpoint(_command(folder, killed, args, "--checkpoint-every", "0.0005"),
                                        killed / CHECKPOINT_FILE, max_delay_s=0.3 * wall_s / 4 ** attempt,
                                        signum=signum):
            break
    else:
        pytest.fail(f"{case} finished each time before it was killed: give it a larger budget")
    _run(_command(folder, killed, args, "--resume", str(killed)))
    assert _summary(killed) == _summary(straight)
    assert _curve(killed) == _curve(straight)
    a, b = read_checkpoint(straight / CHECKPOINT_FILE), read_checkpoint(killed / CHECKPOINT_FILE)
    assert a["meta"]["finished"] and b["meta"]["finished"]
    _assert_same(a["state"], b["state"])
    # (python's and numpy's global generators are left unseeded by examples that do not use them, and torch's
    # by a run on paddle)
    unseeded = {"python", "numpy", *(["torch", "torch_cuda"] if "paddle" in args else [])}
    seeded = {k: v for k, v in a["meta"]["rng"].items() if k not in unseeded}
    _assert_same(seeded, {k: b["meta"]["rng"][k] for k in seeded}, "rng")
