"""PARL 2.2.1's paddle ``examples/DDPG`` and ``examples/QMIX``, their files vendored unchanged in
``tests/parl2/examples`` (``NOTICE.md``), run on this project with ``PARL_BACKEND=paddle`` on a tiny budget set from
outside the files by ``tests/parl2/run_course.py`` (DDPG's fixed 10,000-step random warm-up, ``WARMUP_STEPS``, and
QMIX's ``QMixConfig``), ``import gym`` served by ``tests/parl2/shims``.

DDPG runs its MuJoCo path on Pendulum-v1 through its own ``--env`` flag, learns and ends with
``agent.save_inference_model``. QMIX needs StarCraft II, which cannot be installed here: ``from smac.env import
StarCraft2Env`` is served by the test-only ``tests/parl2/shims/smac`` (SMAC's methods on Level-Based Foraging). QMIX
prints nothing; its evaluations are read back from its summary event file."""

import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENDORED = ROOT / "tests" / "parl2" / "examples"
RUNNER = str(ROOT / "tests" / "parl2" / "run_course.py")

# PARL's qmix_config.py with a budget for a test
CONFIG = {
    "scenario": "3m", "replay_buffer_size": 100, "mixing_embed_dim": 32, "rnn_hidden_dim": 64, "lr": 0.0005,
    "memory_warmup_size": 4, "gamma": 0.99, "exploration_start": 1.0, "min_exploration": 0.1,
    "exploration_decay": 2e-4, "update_target_interval": 8, "batch_size": 4, "training_steps": 100,
    "test_steps": 50, "clip_grad_norm": 10, "hypernet_layers": 2, "hypernet_embed_dim": 64, "double_q": True,
    "difficulty": "7",
}


def read_scalars(logdir):
    """{tag: [(step, value), ...]} of the tensorboard event files in ``logdir`` (TFRecord framing, tensorboardX's
    ``Event`` protobuf)."""
    from tensorboardX.proto import event_pb2

    scalars = {}
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def run_example(folder, spec, tmp_path):
    """Copies a vendored example to ``tmp_path`` and runs its ``main()`` through run_course.py, as PARL's users
    run it (``PARL_BACKEND=paddle``, ``import gym`` from the shims); returns the copy's path and its output."""
    pytest.importorskip("paddle")  # the integration session installs both frameworks
    work = tmp_path / folder
    shutil.copytree(VENDORED / folder, work)
    env = {
        **os.environ,
        "PARL_BACKEND": "paddle",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "parl2" / "shims"), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, RUNNER, json.dumps([{"dir": str(work), **spec}])]
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "main returned" in out.stdout
    return work, out.stdout + out.stderr


@pytest.mark.slow
def test_parl_221_paddle_ddpg_example_learns_and_saves_an_inference_model(tmp_path):
    # its flags (the argparse namespace of its __main__ block) for Pendulum-v1 and 400 steps; 200 random steps first
    args = {"env": "Pendulum-v1", "seed": 2, "train_total_steps": 400, "test_every_steps": 200}
    work, printed = run_example("DDPG", {"set": {"WARMUP_STEPS": 200}, "args": args}, tmp_path)
    returns = [float(r) for r in re.findall(r"Evaluation over: 5 episodes, Reward: ([-\d.]+)", printed)]
    assert len(returns) == 2 and all(-2000.0 < r <= 0.0 for r in returns)  # Pendulum's returns: 200 steps in [-16.3, 0]
    import paddle

    policy = paddle.jit.load(str(work / "inference_model"))  # its last line: agent.save_inference_model
    action = policy(paddle.to_tensor(np.zeros((2, 3), np.float32))).numpy()
    assert action.shape == (2, 1) and np.all(np.abs(action) <= 1.0)  # the actor's tanh output


@pytest.mark.slow
def test_parl_221_paddle_qmix_example_runs_unchanged(tmp_path):
    pytest.importorskip("lbforaging")  # parl-core[marl], installed with the packages
    work, _ = run_example("QMIX", {"set": {"QMixConfig": CONFIG}}, tmp_path)
    scalars = read_scalars(work / "log_path")
    rewards = [v for _, v in scalars["eval_reward"]]
    win_rates = [v for _, v in scalars["eval_win_rate"]]
    assert len(rewards) >= 2 and all(np.isfinite(rewards)) and min(rewards) >= 0.0  # LBF rewards are >= 0
    assert all(0.0 <= w <= 1.0 for w in win_rates)
    losses = [v for _, v in scalars["train_loss"]]
    assert losses and all(np.isfinite(losses))  # QMIX.learn ran (after the warm-up episodes)
