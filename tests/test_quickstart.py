"""examples/quickstart/train.py: a tiny-budget subprocess run, bad input, and the learn-to-threshold run."""

import importlib.util
import json
import os
import pathlib
import struct
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRAIN = ROOT / "examples" / "quickstart" / "train.py"
SUMMARY_KEYS = {"eval_return_mean", "eval_episodes", "env_steps", "wall_s", "episodes", "seed",
                "reached_threshold", "restored_eval_return_mean"}


def run_quickstart(logdir, *args, timeout=240):
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, str(TRAIN), "--logdir", str(logdir), "--no-progress", *args],
                         capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    assert out.returncode == 0, f"train.py failed:\n{out.stdout}\n{out.stderr}"
    with open(logdir / "summary.json", encoding="utf-8") as f:
        return json.load(f), out


def read_scalar_tags(logdir):
    """Read the scalar tags of tensorboard event files (TFRecord framing) with tensorboardX's protobufs."""
    from tensorboardX.proto.event_pb2 import Event

    tags = {}
    for path in pathlib.Path(logdir).glob("events.out.tfevents.*"):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append((event.step, value.simple_value))
    return tags


def test_quickstart_tiny_budget(tmp_path):
    logdir = tmp_path / "qs"
    summary, out = run_quickstart(logdir, "--seed", "3", "--max-episodes", "4", "--episodes-per-update", "2",
                                  "--eval-every", "1")
    assert SUMMARY_KEYS <= set(summary)
    assert summary["episodes"] == 4 and summary["updates"] == 2 and summary["seed"] == 3
    assert summary["eval_episodes"] == 10
    assert summary["env_steps"] >= 4 * 8  # a CartPole episode lasts at least 8 steps
    assert 0 < summary["wall_s"] < 240
    assert 8 <= summary["eval_return_mean"] <= 500
    assert summary["reached_threshold"] is (summary["eval_return_mean"] >= 475)
    # the greedy policy is deterministic and evaluated on the same seeds: restoring changes nothing
    assert summary["restored_eval_return_mean"] == summary["eval_return_mean"]
    assert (logdir / "agent.ckpt").is_file()
    log = (logdir / "log.log").read_text()
    assert "eval return" in log and "restored agent" in log
    tags = read_scalar_tags(logdir)
    assert len(tags["train/episode_return"]) == 4
    assert [step for step, _ in tags["eval/return_mean"]][-1] == summary["env_steps"]
    assert tags["eval/return_mean"][-1][1] == pytest.approx(summary["eval_return_mean"])
    assert len(tags["train/loss"]) == 2


def test_quickstart_rejects_bad_arguments(tmp_path):
    out = subprocess.run([sys.executable, str(TRAIN), "--max-episodes", "0", "--logdir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--max-episodes must be >= 1" in out.stderr


@pytest.fixture(scope="module")
def quickstart():
    spec = importlib.util.spec_from_file_location("quickstart_train", TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_agent_rejects_observations_of_wrong_shape_or_dtype(quickstart):
    agent = quickstart.build_agent(obs_dim=4, act_dim=2, seed=0)
    assert agent.predict(np.zeros(4, dtype=np.float32)) in (0, 1)
    assert agent.predict(np.zeros((3, 4))).shape == (3,)
    with pytest.raises(ValueError, match=r"shape \[4\] or \[N, 4\], got \(3,\)"):
        agent.sample(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="np.stack"):
        agent.predict(np.zeros((2, 2, 4), dtype=np.float32))
    with pytest.raises(TypeError, match="numeric observations"):
        agent.sample(np.array(["a", "b", "c", "d"]))
    with pytest.raises(ValueError, match="shape"):
        agent.learn(np.zeros((5, 3)), np.zeros(5, dtype=np.int64), np.zeros(5))


@pytest.mark.slow
def test_quickstart_learns_cartpole(tmp_path):
    summary, _ = run_quickstart(tmp_path / "seed0", "--seed", "0")
    assert summary["reached_threshold"] is True
    assert summary["eval_return_mean"] >= 475
    assert summary["episodes"] <= 300
    assert summary["restored_eval_return_mean"] == summary["eval_return_mean"]
