"""Each example as a subprocess with a tiny budget, and the Pendulum replica against gymnasium."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "evokit"

pytest.importorskip("gymnasium")
pytest.importorskip("psutil")


def _run(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=timeout)


def _summary(logdir: pathlib.Path) -> dict:
    summary = json.loads((logdir / "summary.json").read_text())
    for key in ("eval_return_mean", "eval_episodes", "env_steps", "wall_s"):
        assert key in summary, summary
    return summary


@pytest.mark.parametrize("actors", [0, 2])
def test_cartpole_example(tmp_path, actors):
    if actors:
        pytest.importorskip("parl_remote")
    proc = _run("cartpole_es.py", "--seed", "0", "--logdir", str(tmp_path), "--actors", str(actors), "--pop", "8",
                "--max-generations", "3", "--eval-episodes", "2", "--no-tensorboard")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    summary = _summary(tmp_path)
    assert summary["sampling"] == ("parl-remote" if actors else "in-process")
    assert summary["generations"] == 3 or summary["solved"]
    assert summary["env_steps"] >= 3 * 8 * 8  # every CartPole episode lasts at least 8 steps
    assert (tmp_path / "model" / "model.npz").is_file() and (tmp_path / "model" / "solver.npz").is_file()
    assert proc.stdout.count("gen ") == summary["generations"]


def test_pendulum_example(tmp_path):
    proc = _run("pendulum_es.py", "--seed", "1", "--logdir", str(tmp_path), "--pop", "8", "--starts", "2",
                "--max-generations", "3", "--eval-every", "1", "--eval-episodes", "1")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    summary = _summary(tmp_path)
    assert summary["env_steps"] == 3 * 8 * 2 * 200
    assert -2000 < summary["eval_return_mean"] <= 0
    assert list(tmp_path.glob("events.out.tfevents.*"))  # tensorboard scalars


@pytest.mark.parametrize("subprocess_phases", [False, True])
def test_online_loop_example(tmp_path, subprocess_phases):
    args = ["loop", "--seed", "0", "--logdir", str(tmp_path), "--rounds", "2", "--samples", "6",
            "--eval-episodes", "1"] + (["--subprocess"] if subprocess_phases else [])
    proc = _run("online_loop.py", *args)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    summary = _summary(tmp_path)
    assert summary["rounds"] == 2 or summary["solved"]
    rounds = summary["rounds"]
    from evokit import ESAgent, read_sampling_log

    infos, rewards = read_sampling_log(tmp_path / f"sampling_log_{rounds - 1}")
    assert len(infos) == 6 and all(i.model_iter_id == rounds - 1 for i in infos)
    assert (rewards >= 8).all()
    final = tmp_path / "model_warehouse" / f"model_dir_{rounds}"
    agent = ESAgent().load_config(EXAMPLES / "online_config.prototxt").load_inference_model(final).load_solver(final)
    assert agent.model_iter_id == rounds


def test_online_update_keeps_complete_records_of_a_truncated_log(tmp_path):
    assert _run("online_loop.py", "init", "--logdir", str(tmp_path)).returncode == 0
    assert _run("online_loop.py", "sample", "--logdir", str(tmp_path), "--samples", "6").returncode == 0
    log = tmp_path / "sampling_log_0"
    log.write_bytes(log.read_bytes()[:-3])  # the last sampler died mid-record
    proc = _run("online_loop.py", "update", "--logdir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "5 complete records" in proc.stderr
    assert (tmp_path / "model_warehouse" / "model_dir_1" / "solver.npz").is_file()


def test_pendulum_replica_matches_gymnasium():
    import gymnasium as gym

    spec = importlib.util.spec_from_file_location("pendulum_es", EXAMPLES / "pendulum_es.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=3)
    batch = module.PendulumBatch(1)
    th, thdot = env.unwrapped.state
    batch_obs = batch.set_state(np.array([th]), np.array([thdot]))
    rng = np.random.default_rng(0)
    for _ in range(100):
        np.testing.assert_allclose(batch_obs[0], obs, rtol=1e-5, atol=1e-6)
        u = rng.uniform(-2.5, 2.5)
        obs, reward, *_ = env.step(np.array([u], dtype=np.float32))
        batch_obs, batch_reward = batch.step(np.array([np.float32(u)]))
        assert batch_reward[0] == pytest.approx(reward, rel=1e-5, abs=1e-6)


def test_online_loop_with_stale_traffic(tmp_path):
    """Half of round 1's samples come from model 0 (async servers); the offline update applies all of them."""
    proc = _run("online_loop.py", "loop", "--seed", "1", "--logdir", str(tmp_path), "--rounds", "2", "--samples", "8",
                "--eval-episodes", "1", "--stale-fraction", "0.5")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    summary = _summary(tmp_path)
    assert summary["rounds"] == 2  # (deterministic: seed 1 does not reach 500 after one update)
    from evokit import read_sampling_log

    infos, _ = read_sampling_log(tmp_path / "sampling_log_1")
    assert sorted(i.model_iter_id for i in infos) == [0] * 4 + [1] * 4
    assert "dropping" not in proc.stderr  # every stale sample was within the model warehouse
