"""examples/es_mujoco with ``--envpool``: the actors play their lockstep episodes in parl.env.EnvPoolMuJoCo
(Hopper-v5: a random policy falls within ~20-100 steps, so episodes end at different steps and the pool steps
a shrinking subset); a task EnvPool does not match is refused with the list of the matched ones."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("envpool")
pytest.importorskip("mujoco")
pytest.importorskip("evokit")

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "es_mujoco" / "train.py"
TINY = ["--env_name", "Hopper-v5", "--min_episodes_per_batch", "8", "--min_steps_per_batch", "400",
        "--noise_size", "100000", "--eval_episodes", "2", "--hidden", "8", "--no-progress", "--actor_num", "1",
        "--max_env_steps", "800"]


def test_es_tiny_run_on_envpool(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--logdir", str(tmp_path), *TINY, "--envpool"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["envpool"] is True and summary["env"] == "Hopper-v5" and summary["actors_replaced"] == 0
    assert summary["env_steps"] >= 800 and summary["generations"] >= 1
    # every generation: >= 8 episodes of >= 400 steps in all; a Hopper episode lasts 1..1000 steps
    assert summary["episodes"] >= 8 * summary["generations"] and summary["env_steps"] <= 1000 * summary["episodes"]
    assert summary["actor_cpu_split_s"]["env"] > 0 and summary["eval_episodes"] == 2


def test_es_envpool_refuses_an_unmatched_task(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--logdir", str(tmp_path), "--env_name", "Ant-v5",
                           "--envpool"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "HalfCheetah-v5" in proc.stderr and "not Ant-v5" in proc.stderr
