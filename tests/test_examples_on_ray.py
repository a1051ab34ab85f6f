"""The distributed examples (IMPALA, A2C, GA3C, ES, and the collectors of MAPPO and QMIX) on a real local Ray
cluster, chosen by their `--address` flag alone (`ray://127.0.0.1:PORT`, Ray Client). Run by nox's `ray` session
(marker `ray`)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packages" / "parl-remote" / "tests"))  # the Ray head helper of parl-remote's tests
from ray_cluster import RayHead  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(400)]

# name: flags of a tiny budget (the xparl test of the same examples uses the same ones)
TINY = {
    "impala": ["--actors", "2", "--total-steps", "1600", "--target-return", "1e9", "--no-progress", "--seed", "0"],
    "a2c_distributed": ["--actors", "2", "--total-steps", "512", "--target-return", "1e9", "--no-progress",
                        "--seed", "0"],
    "ga3c": ["--actors", "2", "--total-steps", "1000", "--target-return", "1e9", "--no-progress", "--seed", "0"],
    "mappo": ["--actors", "2", "--total-steps", "400", "--num-envs", "8", "--eval-every", "400", "--eval-episodes", "4",
              "--no-progress", "--seed", "0"],
    "qmix": ["--actors", "2", "--total-steps", "600", "--eval-every", "300", "--eval-episodes", "4", "--envs-per-actor",
             "4", "--batch-size", "4", "--no-progress", "--seed", "0"],
    "es_mujoco": ["--env_name", "Pendulum-v1", "--min_episodes_per_batch", "4", "--min_steps_per_batch", "800",
                  "--noise_size", "100000", "--eval_episodes", "1", "--hidden", "8", "--no-progress",
                  "--actor_num", "2", "--max_env_steps", "1600"],
}


@pytest.fixture(scope="module")
def ray_head():
    head = RayHead(num_cpus=3).start()
    yield head
    head.stop()


@pytest.mark.parametrize("name", sorted(TINY))
def test_distributed_example_runs_on_ray_by_its_address_flag(ray_head, tmp_path, name):
    cmd = [sys.executable, str(ROOT / "examples" / name / "train.py"), "--logdir", str(tmp_path),
           "--address", ray_head.client_address, *TINY[name]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=360, cwd=str(ROOT),
                          env={**os.environ, **ray_head.env})
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["env_steps"] > 0 and summary["wall_s"] > 0
    assert summary.get("actors", summary.get("actor_num")) == 2
    assert summary.get("actors_replaced", 0) == 0
    assert "Ray" in proc.stderr + proc.stdout or "ray" in proc.stderr  # the actors ran on Ray (its log lines)
