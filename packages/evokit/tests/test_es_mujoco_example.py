"""examples/es_mujoco/train.py as a subprocess on Pendulum-v1 with 2 parl-remote actors: a tiny run, an actor
killed with SIGKILL mid-run, and bad input (each a clear error naming the fix)."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("parl_remote")
pytest.importorskip("tqdm")
pytest.importorskip("tensorboardX")

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "examples" / "es_mujoco" / "train.py"
TINY = ["--env_name", "Pendulum-v1", "--min_episodes_per_batch", "8", "--min_steps_per_batch", "1000",
        "--noise_size", "100000", "--eval_episodes", "1", "--hidden", "8", "--no-progress"]


def _args(logdir: pathlib.Path, *extra: str) -> list[str]:
    return [sys.executable, str(SCRIPT), "--logdir", str(logdir), *TINY, *extra]


def _run(logdir: pathlib.Path, *extra: str, timeout: float = 150) -> subprocess.CompletedProcess:
    return subprocess.run(_args(logdir, *extra), capture_output=True, text=True, timeout=timeout)


def test_tiny_run_with_two_actors_then_resume(tmp_path):
    config = tmp_path / "es.toml"  # PARL's names in a file; flags override it (min_episodes_per_batch 8)
    config.write_text("max_env_steps = 6000\nmin_episodes_per_batch = 4\neval_prob = 1.0\n")
    proc = _run(tmp_path / "a", "--config", str(config), "--actor_num", "2", "--eval_interval", "3000", "--seed", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    for key in ("eval_return_mean", "eval_episodes", "env_steps", "wall_s", "env_steps_per_s", "actor_cpu_split_s"):
        assert key in summary, summary
    assert summary["env_steps"] == 4 * 8 * 200  # 4 generations of 2 actors x 4 Pendulum episodes of 200 steps
    assert summary["actor_num"] == 2 and summary["actors_replaced"] == 0
    assert -2000 < summary["eval_return_mean"] <= 0
    assert summary["actor_cpu_split_s"]["env"] > 0 and summary["actor_cpu_split_s"]["policy"] > 0
    curve = (tmp_path / "a" / "curve.csv").read_text().splitlines()
    assert len(curve) == 1 + summary["generations"] and curve[0].startswith("env_steps,")
    assert any(line.split(",")[-1] for line in curve[1:])  # an evaluation was logged
    assert list((tmp_path / "a").glob("events.out.tfevents.*"))
    with np.load(tmp_path / "a" / "model" / "obs_filter.npz") as saved:
        assert int(saved["n"]) > 0  # the actors' increments reached the learner's filter
    # the saved model and filter start a new run; a corrupted filter is a clear error
    proc = _run(tmp_path / "b", "--actor_num", "1", "--max_env_steps", "1000", "--init_model",
                str(tmp_path / "a" / "model"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = dict(np.load(tmp_path / "a" / "model" / "obs_filter.npz"))
    saved["m2"] = -saved["m2"] - 1
    np.savez(tmp_path / "a" / "model" / "obs_filter.npz", **saved)
    proc = _run(tmp_path / "c", "--init_model", str(tmp_path / "a" / "model"), timeout=60)
    assert proc.returncode != 0
    assert "cannot restore the observation filter" in proc.stderr and "negative m2" in proc.stderr


def test_sigterm_then_resume_goes_on_from_the_checkpoint(tmp_path):
    """SIGTERM between two generations saves checkpoint.npz and exits 143; ``--resume DIR`` continues the agent,
    filter, counters and curve to the budget; a folder without a checkpoint is refused naming the fix."""
    budget = 30 * 8 * 200  # 30 generations of 8 Pendulum episodes
    args = _args(tmp_path, "--actor_num", "2", "--max_env_steps", str(budget), "--checkpoint-every", "0")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    curve = tmp_path / "curve.csv"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if curve.exists() and len(curve.read_text().splitlines()) >= 3:  # the header and two generations
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before its second generation"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert (tmp_path / "checkpoint.npz").is_file() and not (tmp_path / "summary.json").exists()
    rows_before = curve.read_text().splitlines()
    proc = subprocess.run([*_args(tmp_path, "--actor_num", "2", "--max_env_steps", str(budget)), "--resume",
                           str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["resumed"] is True and summary["env_steps"] == budget and summary["generations"] == 30
    rows = curve.read_text().splitlines()
    assert rows[:len(rows_before)] == rows_before and len(rows) == 1 + 30
    assert [int(r.split(",")[2]) for r in rows[1:]] == list(range(1, 31))  # generations, none twice
    proc = _run(tmp_path / "none", "--resume", str(tmp_path / "none"), timeout=60)
    assert proc.returncode != 0 and "no checkpoint at" in proc.stderr and "without --resume" in proc.stderr


def test_a_killed_actor_is_replaced_and_training_goes_on(tmp_path):
    proc = subprocess.Popen(_args(tmp_path, "--actor_num", "2", "--max_env_steps", "40000"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids_file = tmp_path / "actor_pids.json"
    deadline = time.monotonic() + 90
    victim = None
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        try:
            pids = json.loads(pids_file.read_text())["pids"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            time.sleep(0.05)
            continue
        victim = pids[0]
    assert victim is not None, "the run wrote no actor pids"
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=150)
    assert proc.returncode == 0, err[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["actors_replaced"] == 1
    assert summary["env_steps"] >= 40000
    assert "died" in out and "starting a replacement" in out
    assert victim not in json.loads(pids_file.read_text())["pids"]


@pytest.mark.parametrize("extra, fragments", [
    (["--env_name", "CartPole-v1"], ["Discrete action space", "continuous-control env"]),
    (["--noise_size", "5000"], ["--noise_size 5000 is too small", "use --noise_size"]),
    (["--config", "{config}"], ["unknown hyper-parameters ['actor_nums']", "known: "]),
])
def test_bad_input_is_a_clear_error(tmp_path, extra, fragments):
    (tmp_path / "bad.toml").write_text("actor_nums = 3\n")
    extra = [arg.format(config=tmp_path / "bad.toml") for arg in extra]
    proc = _run(tmp_path, *extra, timeout=60)
    assert proc.returncode != 0
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr[-2000:]


def test_more_actors_than_cpus_waits_then_fails_naming_the_fix(tmp_path):
    # the wait also covers the embedded cluster's start (its job processes), hence not a shorter one
    proc = _run(tmp_path, "--actor_num", "3", "--cpu_num", "2", "--resource_wait_s", "20", timeout=120)
    assert proc.returncode != 0
    assert "waiting up to 20 s for 3 free CPUs" in proc.stdout
    assert "could not start ES actor 3" in proc.stderr and "lower --actor_num" in proc.stderr, proc.stderr[-2000:]
