"""examples/dqn_variants/train.py: the Nature and MinAtar networks, the dueling aggregation, the frame-efficient
replay memory against wrap_deepmind's stacks, tiny-budget runs on MinAtar and Atari, save / restore, bad input."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRAIN = ROOT / "examples" / "dqn_variants" / "train.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("dqn_variants_train", TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_train(logdir, *args, timeout=600):
    out = subprocess.run([sys.executable, str(TRAIN), "--logdir", str(logdir), "--no-progress", "--device", "cpu",
                          *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    assert out.returncode == 0, f"train.py failed:\n{out.stdout}\n{out.stderr}"
    with open(pathlib.Path(logdir) / "summary.json", encoding="utf-8") as f:
        return json.load(f)


def read_curve(logdir):
    lines = (pathlib.Path(logdir) / "curve.csv").read_text().splitlines()
    header = lines[0].split(",")
    return [dict(zip(header, map(float, line.split(",")), strict=True)) for line in lines[1:]]


def check_networks(example, backend):
    """Output shapes of both networks and the dueling aggregation on ``backend`` (the paddle twin of this check is
    packages/parl-algorithms/tests/test_examples_dqn_variants_paddle.py, whose nox session installs paddle)."""
    nature, minatar = example.define_networks(backend)
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")
    rng = np.random.default_rng(0)
    atari_obs = ops.tensor(rng.integers(0, 256, (2, 4, 84, 84), dtype=np.uint8))
    minatar_obs = ops.tensor(rng.integers(0, 2, (3, 4, 10, 10)).astype(np.float32))
    for dueling in (False, True):
        assert tuple(nature(6, dueling=dueling)(atari_obs).shape) == (2, 6)
        assert tuple(minatar(4, 3, dueling=dueling)(minatar_obs).shape) == (3, 3)
    # Q = V + A - mean(A): the mean of Q over actions is V, and Q minus its mean is A minus its mean
    net = nature(6, dueling=True)
    with ops.no_grad():
        h = net.torso(atari_obs.astype("float32") / 255.0 if backend == "paddle" else atari_obs.float() / 255.0)
        q, v, adv = (ops.to_numpy(t) for t in (net(atari_obs), net.head.v(h), net.head.q(h)))
    np.testing.assert_allclose(q.mean(1, keepdims=True), v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(q - q.mean(1, keepdims=True), adv - adv.mean(1, keepdims=True), rtol=1e-4, atol=1e-5)
    assert np.abs(adv - adv.mean(1, keepdims=True)).max() > 1e-4  # the advantages differ across actions


def test_network_shapes_and_dueling_aggregation(example):
    check_networks(example, "torch")


def test_frame_memory_rebuilds_wrap_deepmind_stacks(example):
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    env = example.make_env("BreakoutNoFrameskip-v4")  # episodic life: a lost life resets the frame stack
    memory = example.FrameReplayMemory(10_000, (84, 84), 4, seed=0)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    memory.start_episode(obs[-1])
    seen = {0: obs}  # absolute frame index -> the stacked observation wrap_deepmind gave there
    transitions, resets = [], 0
    for _ in range(400):
        action = int(rng.integers(env.action_space.n))
        next_obs, reward, terminated, truncated, _ = env.step(action)
        memory.append(action, reward, terminated, next_obs[-1])
        seen[memory.count - 1] = next_obs
        transitions.append((memory.count - 1, obs, action, reward, next_obs, terminated))
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
            memory.start_episode(obs[-1])
            seen[memory.count - 1] = obs
            resets += 1
    assert resets >= 2  # the stacks after a reset (padded with the reset frame) are covered
    ends = np.array([t[0] for t in transitions])
    batch_obs, batch_act, batch_rew, batch_next, batch_term = memory.sample_batch_by_index(ends)
    assert batch_obs.dtype == np.uint8 and batch_obs.shape == (len(ends), 4, 84, 84)
    np.testing.assert_array_equal(batch_obs, np.stack([t[1] for t in transitions]))
    np.testing.assert_array_equal(batch_next, np.stack([t[4] for t in transitions]))
    np.testing.assert_array_equal(batch_act, [t[2] for t in transitions])
    np.testing.assert_array_equal(batch_rew, [t[3] for t in transitions])
    np.testing.assert_array_equal(batch_term, [float(t[5]) for t in transitions])
    sampled_obs, *_ = memory.sample_batch(64)
    stacks = {s.tobytes() for s in seen.values()}
    assert all(s.tobytes() in stacks for s in sampled_obs)
    with pytest.raises(ValueError, match="first frame of an episode"):
        memory.sample_batch_by_index([0])
    env.close()


def test_frame_memory_overwrites_oldest(example):
    memory = example.FrameReplayMemory(8, (1,), 2, seed=0)
    memory.start_episode(np.array([0], np.uint8))
    for k in range(1, 20):
        memory.append(k % 3, float(k), False, np.array([k], np.uint8))
    assert memory.size() == 8 and memory.count == 20
    obs, action, reward, next_obs, _ = memory.sample_batch(256)
    # valid transitions end at frames 14..19 (frame 12 and 13, the stack before 14, are still stored)
    assert set(reward.astype(int)) == set(range(14, 20))
    np.testing.assert_array_equal(next_obs[:, :, 0], np.stack([reward - 1, reward], 1))
    np.testing.assert_array_equal(obs[:, :, 0], np.stack([reward - 2, reward - 1], 1))
    np.testing.assert_array_equal(action, reward.astype(int) % 3)


def test_minatar_tiny_run_then_restore(example, tmp_path):
    pytest.importorskip("minatar")
    first = run_train(tmp_path / "a", "--env", "MinAtar/Breakout-v1", "--dueling", "--algo", "ddqn", "--seed", "1",
                      "--total-steps", "400", "--warmup-size", "100", "--eval-every", "200", "--eval-episodes", "1")
    assert first["algorithm"] == "DDQN" and first["dueling"] is True and first["finished"] is True
    assert first["env_steps"] == 400
    assert 75 <= first["learn_steps"] <= 100  # one learn call every 4 steps once 100 frames are stored
    curve = read_curve(tmp_path / "a")
    assert [row["env_steps"] for row in curve] == [200, 400]
    assert curve[-1]["eval_return_mean"] == first["eval_return_mean"] and curve[-1]["epsilon"] == pytest.approx(0.1)
    # restore: an evaluation-only run (--total-steps 0) from the checkpoint writes back the same weights;
    # in this process (the import of torch in a subprocess is the slow part of the test)
    common = ["--env", "MinAtar/Breakout-v1", "--dueling", "--algo", "ddqn", "--total-steps", "0", "--no-progress",
              "--device", "cpu", "--eval-episodes", "1"]
    again = example.main([*common, "--restore", str(tmp_path / "a" / "model.ckpt"), "--logdir", str(tmp_path / "b")])
    assert again["env_steps"] == 0 and again["learn_steps"] == 0 and again["eval_episodes"] == 1
    example.main([*common, "--logdir", str(tmp_path / "c")])
    import torch

    def weights(name):
        return torch.load(tmp_path / name / "model.ckpt", weights_only=True)  # PARL's file: the Q-network's state_dict

    a, b, c = weights("a"), weights("b"), weights("c")
    assert a.keys() == b.keys() and len(a) == 10  # conv, the dueling head's 2 x 2 layers: weights and biases
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not any(torch.equal(a[k], c[k]) for k in a)


def test_atari_tiny_run(tmp_path):
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    result = run_train(tmp_path / "pong", "--env", "PongNoFrameskip-v4", "--dueling", "--total-steps", "240",
                       "--warmup-size", "100", "--memory-size", "1000", "--eval-every", "1000", "--eval-episodes", "1")
    assert result["env"] == "PongNoFrameskip-v4" and result["algorithm"] == "DQN" and result["env_steps"] == 240
    assert result["learn_steps"] == (240 - 96) // 4  # every 4th step once 100 frames are stored
    assert -21 <= result["eval_return_mean"] <= 21 and result["eval_epsilon"] == 0.05
    assert result["config"]["memory_size"] == 1000 and result["config"]["target_update"] == 2500
    assert len(read_curve(tmp_path / "pong")) == 1


@pytest.mark.parametrize("args, message", [
    (["--env", "CartPole-v1"], "pass an Atari id such as PongNoFrameskip-v4"),
    (["--env", "MinAtar/Breakout-v1", "--memory-size", "10"], "--memory-size 10 is too small: pass at least 34"),
    (["--env", "MinAtar/Breakout-v1", "--warmup-size", "500", "--memory-size", "100"], "exceeds --memory-size"),
    (["--env", "MinAtar/Breakout-v1", "--total-steps", "-1"], "--total-steps must be >= 0"),
    (["--env", "MinAtar/Breakout-v1", "--restore", "nope.ckpt"], "pass the model.ckpt of an earlier run"),
])
def test_bad_input_names_the_fix(example, capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        example.parse_args(args)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
