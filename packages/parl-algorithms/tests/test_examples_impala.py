"""examples/impala as a real subprocess: a tiny budget, learning CartPole (slow), and a SIGKILLed actor."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from test_algorithms_examples import EXAMPLES, ROOT, check_summary, run_example

UNROLL_STEPS = 8 * 20  # envs per actor x unroll length (the CartPole defaults)


def test_impala_example_tiny_budget(tmp_path):
    result = run_example("impala", tmp_path, "--total-steps", str(10 * UNROLL_STEPS), "--target-return", "1e9")
    check_summary(result, 10 * UNROLL_STEPS)
    assert result["updates"] == 10 and result["actors"] == 2 and result["actors_replaced"] == 0
    assert 8.0 <= result["eval_return_mean"] <= 500.0 and result["reached"] is False
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
    with open(tmp_path / "curve.csv") as f:
        assert f.readline().strip() == "env_steps,wall_s,episode_return"
        assert len(f.readlines()) > 0  # short random-policy episodes end within 3200 steps


@pytest.mark.slow
def test_impala_example_learns_cartpole(tmp_path):
    result = run_example("impala", tmp_path, "--target-return", "475", timeout=600)
    assert result["reached"] is True, result
    assert result["eval_return_mean"] >= 475.0 and result["env_steps"] <= 500_000


def _wait_for(pattern, stream, deadline_s, seen):
    """Read lines of ``stream`` into ``seen`` until one matches ``pattern``; the match, or fail at the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match
    pytest.fail(f"no line matching {pattern!r} within {deadline_s} s:\n{''.join(seen)[-4000:]}")


def test_impala_example_replaces_a_killed_actor(tmp_path):
    steps = 60 * UNROLL_STEPS
    cmd = [sys.executable, str(EXAMPLES / "impala" / "train.py"), "--seed", "0", "--logdir", str(tmp_path),
           "--no-progress", "--total-steps", str(steps), "--target-return", "1e9"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                            env=dict(os.environ, PYTHONHASHSEED="0"))
    seen = []
    try:
        started = r"actor (\d+) started in slot (\d+), pid=(\d+)"
        pids = {}  # slot -> pid (the pool starts its first actors in parallel: in either order)
        for _ in range(2):
            match = _wait_for(started, proc.stderr, 120, seen)
            pids[int(match.group(2))] = int(match.group(3))
        os.kill(pids[0], signal.SIGKILL)
        replacement = _wait_for(r"actor 2 started in slot 0, pid=(\d+)", proc.stderr, 120, seen)
        assert int(replacement.group(1)) not in pids.values()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = "".join(seen) + err
    assert proc.returncode == 0, log[-4000:]
    assert re.search(r"actor 0 died \(ActorDiedError: .*SIGKILL.*\); starting a replacement", log), log[-4000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["actors_replaced"] == 1
    assert result["env_steps"] == steps  # training went on to the full budget after the loss


def test_impala_actor_unroll_feeds_learn_env_major():
    """The example's actor draws actions from ``IMPALA.sample``'s probs; ``env_major`` flattens its
    ``[T, E, ...]`` unroll to PARL's rows ``e * T + t``, and a read-only (received) array comes back writable."""
    import numpy as np
    import torch
    from test_examples_distributed import load_example

    train = load_example("impala")
    grid = np.arange(3 * 2 * 4).reshape(3, 2, 4)  # [T=3, E=2, 4]
    grid.flags.writeable = False
    flat = train.env_major(grid)
    assert flat.shape == (6, 4) and flat.flags.writeable
    for e in range(2):
        for t in range(3):
            np.testing.assert_array_equal(flat[e * 3 + t], grid[t, e])
    torch.manual_seed(0)
    actor = train.Actor._original("CartPole-v1", 2, 3, train.CONFIGS["vector"], seed=0)
    batch = actor.sample(None)
    assert batch["actions"].shape == (3, 2) and set(batch["actions"].ravel().tolist()) <= {0, 1}
    assert batch["behaviour_logits"].shape == (3, 2, 2) and batch["obs"].shape == (3, 2, 4)
    losses, kl = actor.alg.learn(*(train.env_major(batch[k]) for k in ("obs", "actions", "behaviour_logits",
                                                                        "rewards", "dones")), 1e-3, -0.01)
    assert np.isfinite(float(losses.total_loss)) and float(kl) == pytest.approx(0.0, abs=1e-6)  # same policy


def test_impala_atari_actor_envpool_and_gymnasium_unrolls_alike():
    """``--envpool``: the actor's unroll from EnvPoolAtari has the gymnasium path's keys, shapes and dtypes."""
    pytest.importorskip("envpool")
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    import torch
    from test_examples_distributed import load_example

    train = load_example("impala")
    cfg = train.CONFIGS["atari-per-unroll"]
    batches = []
    for use_envpool in (False, True):
        torch.manual_seed(0)
        actor = train.Actor._original("PongNoFrameskip-v4", 2, 4, cfg, 0, use_envpool)
        batches.append(actor.sample(None))
    gym_batch, pool_batch = batches
    assert gym_batch.keys() == pool_batch.keys()
    for key in ("obs", "actions", "behaviour_logits", "rewards", "dones"):
        assert pool_batch[key].shape == gym_batch[key].shape and pool_batch[key].dtype == gym_batch[key].dtype, key
    assert pool_batch["obs"].shape == (4, 2, 4, 42, 42)
    # the first observations of the games: the same screen but the opponent's paddle and the score, which move
    # during the 1..30 no-op frames (drawn by different generators; parl-core's tests compare frame by frame)
    assert (pool_batch["obs"][0] == gym_batch["obs"][0]).mean() > 0.99


def test_impala_envpool_missing_names_the_extra():
    code = ("import runpy, sys; sys.modules['envpool'] = None; "
            f"sys.argv = ['train.py', '--env', 'PongNoFrameskip-v4', '--envpool']; "
            f"runpy.run_path({str(EXAMPLES / 'impala' / 'train.py')!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pip install 'parl-core[envpool]'" in proc.stderr


def test_impala_parl_config_is_the_atari_default_tiny_budget_on_envpool(tmp_path):
    """Atari without ``--config`` runs ``parl`` (PARL's impala_config.py): learner batches of 1,000 steps gathered
    from 250-step unrolls (5 envs x 50 steps per actor), PARL's model; a few thousand EnvPool steps write
    summary.json and curve.csv."""
    pytest.importorskip("envpool")
    pytest.importorskip("ale_py")
    result = run_example("impala", tmp_path, "--env", "PongNoFrameskip-v4", "--envpool", "--total-steps", "3000",
                         timeout=600)
    assert result["config"] == "parl" and result["envs_per_actor"] == 5 and result["unroll_length"] == 50
    assert result["train_batch_size"] == 1000 and result["env_steps"] == 3000 and result["updates"] == 3
    with open(tmp_path / "curve.csv") as f:
        assert f.readline().strip() == "env_steps,wall_s,episode_return"


def test_impala_parl_model_is_parls():
    """PARL's examples/IMPALA/atari_model.py: convs 16x4x4/2 (pad 1), 32x4x4/2 (pad 2), 256x11x11 to a 256-vector on
    42x42 frames, N(0, 1) heads; 1,002,551 parameters for Pong's 6 actions."""
    import torch
    from test_examples_distributed import load_example

    train = load_example("impala")
    model = train.ParlAtariModel(6)
    assert sum(p.numel() for p in model.parameters()) == 1_002_551
    logits, value = model.policy_and_value(torch.zeros(3, 4, 42, 42))
    assert logits.shape == (3, 6) and value.shape == (3, 1)
    assert 0.8 < float(model.pi.weight.detach().std()) < 1.2  # N(0, 1), not torch's default uniform


@pytest.mark.parametrize("model_name, dim", [("ParlAtariModel", 42), ("AtariModel", 42), ("AtariModel", 84)])
def test_impala_torso_last_conv_as_a_matrix_product_matches_the_conv(model_name, dim):
    """``torso_features`` computes the torso's last conv (one output pixel at 42x42) as a matrix product of the same
    weights: the torso's own output to float rounding, gradients too; at 84x84 (several pixels) it is the conv."""
    import torch
    from test_examples_distributed import load_example

    train = load_example("impala")
    torch.manual_seed(0)
    model = getattr(train, model_name)(6, dim)
    obs = torch.rand(7, 4, dim, dim) * 255
    fast, slow = model._features(obs), model.torso(obs / 255.0)
    assert fast.shape == slow.shape
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)
    grads = []
    for out in (fast, slow):
        model.zero_grad()
        out.square().sum().backward(retain_graph=True)
        grads.append(model.torso[4].weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("args, message", [
    (["--config", "parl"], "--config parl is an Atari configuration"),
    (["--config", "per-unroll"], "--config per-unroll is an Atari configuration"),
    (["--train-batch-size", "30"], "--train-batch-size must be a multiple of the unroll length 20"),
])
def test_impala_config_errors_name_the_fix(args, message):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "impala" / "train.py"), *args], capture_output=True,
                          text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]


def test_impala_resume_of_a_checkpoint_from_before_parl_was_the_atari_default(tmp_path):
    """An Atari checkpoint whose run stored ``config: "default"`` (the Atari default before ``parl``) resumes with
    ``--config per-unroll``; resuming it with the new default (``parl``) is refused with the setting named."""
    import torch
    from test_examples_distributed import load_example

    train = load_example("impala")
    run = dict(env="PongNoFrameskip-v4", config="default", envs_per_actor=8, unroll_length=50,
               train_batch_size=400, seed=0, envpool=True)
    path = tmp_path / train.CHECKPOINT
    torch.save({"format": 1, "run": run, "env_steps": 400}, path)
    assert train.load_checkpoint(str(path), dict(run, config="per-unroll"))["env_steps"] == 400
    with pytest.raises(SystemExit, match=r"config: 'per-unroll' there, 'parl' here"):
        train.load_checkpoint(str(path), dict(run, config="parl"))


def test_impala_resume_goes_on_from_the_checkpoint(tmp_path):
    """A run that stops writes checkpoint.pt; ``--resume DIR`` continues its counters, learner, curve and clock."""
    first = run_example("impala", tmp_path, "--total-steps", str(5 * UNROLL_STEPS), "--target-return", "1e9")
    assert (tmp_path / "checkpoint.pt").is_file() and first["updates"] == 5 and first["resumed"] is False
    with open(tmp_path / "curve.csv") as f:
        rows_before = f.readlines()
    second = run_example("impala", tmp_path, "--resume", str(tmp_path), "--total-steps", str(12 * UNROLL_STEPS),
                         "--target-return", "1e9")
    assert second["resumed"] is True and second["updates"] == 12 and second["env_steps"] == 12 * UNROLL_STEPS
    assert second["wall_s"] > first["wall_s"]  # the clock goes on from the first run's
    with open(tmp_path / "curve.csv") as f:
        rows_after = f.readlines()
    assert rows_after[:len(rows_before)] == rows_before and rows_after.count(rows_before[0]) == 1  # one header


def test_impala_resume_after_sigkill(tmp_path):
    """SIGKILL of the learner between checkpoints: the resumed run starts from the last checkpoint and finishes."""
    steps = 120 * UNROLL_STEPS
    cmd = [sys.executable, str(EXAMPLES / "impala" / "train.py"), "--seed", "0", "--logdir", str(tmp_path),
           "--no-progress", "--total-steps", str(steps), "--target-return", "1e9", "--checkpoint-every", "0.005"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(ROOT),
                            env=dict(os.environ, PYTHONHASHSEED="0"))
    try:
        deadline = time.monotonic() + 240
        while not (tmp_path / "checkpoint.pt").exists():  # the first checkpoint, ~0.3 s of training in
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint written"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    import torch

    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert 0 < saved["env_steps"] < steps
    result = run_example("impala", tmp_path, "--resume", str(tmp_path), "--total-steps", str(steps),
                         "--target-return", "1e9", timeout=600)
    assert result["resumed"] is True and result["env_steps"] == steps
    assert result["updates"] == 120  # the updates before the checkpoint and those after it, none twice


@pytest.mark.parametrize("damage, message", [
    (None, "no checkpoint at"),
    (b"", "is not a readable checkpoint of this example"),
    (b"\x00garbage" * 100, "is not a readable checkpoint of this example"),
])
def test_impala_resume_refuses_a_missing_or_damaged_checkpoint(tmp_path, damage, message):
    if damage is not None:
        (tmp_path / "checkpoint.pt").write_bytes(damage)
    proc = subprocess.run([sys.executable, str(EXAMPLES / "impala" / "train.py"), "--resume", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 1 and message in proc.stderr and str(tmp_path) in proc.stderr, proc.stderr[-2000:]
    assert "weights_only=False" not in proc.stderr


def test_impala_resume_refuses_other_settings(tmp_path):
    run_example("impala", tmp_path, "--total-steps", str(2 * UNROLL_STEPS), "--target-return", "1e9")
    proc = subprocess.run([sys.executable, str(EXAMPLES / "impala" / "train.py"), "--resume", str(tmp_path),
                           "--unroll-length", "10"], capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 1 and "unroll_length: 20 there, 10 here" in proc.stderr, proc.stderr[-2000:]
