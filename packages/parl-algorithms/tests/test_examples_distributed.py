"""The distributed examples (examples/a2c_distributed, examples/ga3c): as real subprocesses on the embedded local
cluster, a tiny budget (exact exit code and summary values), a run stopped by SIGTERM and resumed with --resume,
and a learn-to-threshold run of each, marked slow, during which one actor's process is killed with SIGKILL (the run
must log the ActorDiedError, replace the actor and still reach the target); in process, each example's actor and
CNN on Atari frames (wrap_deepmind)."""

import importlib.util
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from test_algorithms_examples import EXAMPLES, ROOT, run_example, sigterm_when

from parl_core.utils.run import read_checkpoint


def command(name, logdir, *args):
    return [sys.executable, str(EXAMPLES / name / "train.py"), "--actors", "2", "--logdir", str(logdir),
            "--no-progress", *args]


def run_tiny(name, logdir, *args):
    result = run_example(name, logdir, "--actors", "2", "--target-return", "1e9", *args)
    assert result["actors"] == 2 and result["actors_replaced"] == 0
    assert result["eval_episodes"] == 10 and result["eval_source"] == "greedy"
    assert 8.0 <= result["eval_return_mean"] <= 500.0  # CartPole's range for a (nearly) untrained policy
    assert result["reached"] is False
    assert result["resumed"] is False
    assert result["wall_s"] > 0 and math.isclose(result["env_steps_per_s"], result["env_steps"] / result["wall_s"],
                                                  rel_tol=0.01)
    assert 0.0 < result["actors_ready_s"] < result["wall_s"]
    assert any(p.name.startswith("events.out.tfevents") for p in Path(logdir).iterdir())
    return result


def test_a2c_distributed_tiny_budget(tmp_path):
    # 2 actors x 8 envs x 16 steps = 256 env steps per synchronous update
    result = run_tiny("a2c_distributed", tmp_path, "--total-steps", "512")
    assert result["algorithm"] == "A2C" and result["envs_per_actor"] == 8 and result["unroll_length"] == 16
    assert result["env_steps"] == 512 and result["updates"] == 2
    with open(tmp_path / "curve.csv") as f:
        rows = f.read().splitlines()
    assert rows[0] == "env_steps,wall_s,episode_return" and len(rows) > 10  # CartPole: short random episodes
    assert {int(r.split(",")[0]) for r in rows[1:]} <= {256, 512}  # each game at the update that received it
    assert (tmp_path / "checkpoint.npz").exists()


def test_a2c_distributed_stopped_by_sigterm_then_resumed(tmp_path):
    """SIGTERM saves a checkpoint between two updates; --resume goes on from it to the budget (new games on the
    actors: not bit-exact, but the counters, the learner and the curve go on)."""
    cmd = command("a2c_distributed", tmp_path, "--total-steps", "25600", "--target-return", "1e9",
                  "--checkpoint-every", "0.001")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    sigterm_when(proc, (tmp_path / "checkpoint.npz").exists, 120, "checkpoint", proc.stderr.read)
    stderr = proc.communicate(timeout=60)[1]
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert not (tmp_path / "summary.json").exists()  # a stop writes the checkpoint; the summary comes at the end
    from parl_core.utils.run import read_checkpoint

    stopped_at = read_checkpoint(tmp_path / "checkpoint.npz")["meta"]["step"]
    assert 0 < stopped_at < 25600
    done = subprocess.run([*cmd, "--resume", str(tmp_path)], capture_output=True, text=True, timeout=240,
                          cwd=str(ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "summary.json").read_text())
    assert (result["env_steps"], result["updates"], result["resumed"]) == (25600, 100, True)
    with open(tmp_path / "curve.csv") as f:
        steps = [int(line.split(",")[0]) for line in f.read().splitlines()[1:]]
    assert steps == sorted(steps) and steps[-1] <= 25600 and any(s <= stopped_at for s in steps)


def test_ga3c_tiny_budget(tmp_path):
    # unrolls of 8 envs x 16 steps (128 env steps); each learn takes unrolls until it has >= 256 transitions
    result = run_tiny("ga3c", tmp_path, "--total-steps", "1000")
    assert result["algorithm"] == "GA3C" and result["envs_per_actor"] == 8 and result["unroll_length"] == 16
    assert result["env_steps"] % 128 == 0 and 1000 <= result["env_steps"] < 1000 + 4 * 128
    assert 1 <= result["updates"] <= result["env_steps"] // 256
    assert result["predict_batch_requests"] >= 1.0
    assert 0.0 < result["step_env_ms"] <= result["step_call_ms"]  # the round trip includes the env step
    with open(tmp_path / "curve.csv") as f:
        rows = f.read().splitlines()
    assert rows[0] == "env_steps,wall_s,episode_return" and len(rows) > 10  # CartPole: short random episodes
    steps = [int(r.split(",")[0]) for r in rows[1:]]
    assert steps == sorted(steps) and steps[-1] <= result["env_steps"] and set(steps) <= set(range(256, 2000, 128))
    final = read_checkpoint(tmp_path / "checkpoint.npz")
    assert final["meta"]["finished"] is True and final["meta"]["step"] == result["env_steps"]


def test_ga3c_stopped_by_sigterm_then_resumed(tmp_path):
    """SIGTERM saves a checkpoint between two updates; --resume goes on from it to the budget. The actors start new
    games and sampling is asynchronous (not bit-exact), but the counters, the learner, the curve and the clock go on."""
    total = 12800
    cmd = command("ga3c", tmp_path, "--total-steps", str(total), "--target-return", "1e9", "--checkpoint-every",
                  "0.001")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(ROOT))
    try:
        # stopped halfway (a checkpoint after each update): counters that started again from zero would show below
        sigterm_when(proc, lambda: (tmp_path / "checkpoint.npz").exists()
                     and read_checkpoint(tmp_path / "checkpoint.npz")["meta"]["step"] >= total // 2,
                     240, f"checkpoint at >= {total // 2} env steps", proc.stdout.read)
        output = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, output[-3000:]
    assert "SIGTERM: saved" in output and not (tmp_path / "summary.json").exists()
    stopped = read_checkpoint(tmp_path / "checkpoint.npz")
    stopped_at, counters = stopped["meta"]["step"], stopped["state"]["counters"]
    assert stopped["meta"]["finished"] is False and total // 2 <= stopped_at == counters["env_steps"] < total
    assert counters["generation"] == [1, 1] and counters["updates"] >= total // 2 // 512
    curve = (tmp_path / "curve.csv").read_text()

    done = subprocess.run([*cmd, "--resume", str(tmp_path)], capture_output=True, text=True, timeout=300,
                          cwd=str(ROOT))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    result = json.loads((tmp_path / "summary.json").read_text())
    assert result == json.loads(done.stdout.strip().splitlines()[-1])
    assert f"resumed {tmp_path / 'checkpoint.npz'} at step {stopped_at}" in done.stdout + done.stderr
    assert result["resumed"] is True and total <= result["env_steps"] < total + 4 * 128
    # each update learns from 2-4 unrolls of 128 env steps: the updates after the checkpoint match the env steps
    # after it only when both counters went on from the checkpoint
    more_steps, more_updates = result["env_steps"] - stopped_at, result["updates"] - counters["updates"]
    assert 2 * 128 * more_updates <= more_steps <= 4 * 128 * more_updates, (stopped_at, counters, result)
    assert result["wall_s"] > stopped["meta"]["run"]["wall_s"]  # the clock went on too
    final = read_checkpoint(tmp_path / "checkpoint.npz")
    assert final["meta"]["finished"] is True and final["state"]["counters"]["generation"] == [2, 2]  # new games
    # curve.csv: the rows up to the checkpoint as they were, then only rows after it (none twice)
    new = (tmp_path / "curve.csv").read_text()
    assert new.startswith(curve) and len(new) > len(curve)
    kept = [int(line.split(",")[0]) for line in curve.splitlines()[1:]]
    added = [int(line.split(",")[0]) for line in new[len(curve):].splitlines()]
    assert kept and kept[-1] <= stopped_at < added[0] and added == sorted(added) and added[-1] <= result["env_steps"]


def test_ga3c_resume_without_a_checkpoint_is_refused(tmp_path):
    proc = subprocess.run([*command("ga3c", tmp_path), "--resume", str(tmp_path)], capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-2000:]
    assert f"--resume: no checkpoint at {tmp_path / 'checkpoint.npz'}" in proc.stderr
    assert "start the run again without --resume" in proc.stderr and "Traceback" not in output
    assert "actor 0 started" not in output and not (tmp_path / "summary.json").exists()  # refused before any actor


def load_example(name):
    """The example's train.py as a module (its ``@parl.remote_class`` actors keep the plain class in ``_original``)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / name / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a2c_distributed_actor_and_cnn_on_atari():
    train = load_example("a2c_distributed")
    torch.manual_seed(0)
    actor = train.Actor._original("PongNoFrameskip-v4", 2, 3, train.CONFIGS["atari"], seed=0)
    assert isinstance(actor.alg.model, train.AtariModel)
    unroll = actor.sample(actor.alg.model.get_weights())
    assert unroll["obs"].shape == (3, 2, 4, 84, 84) and unroll["obs"].dtype == np.uint8  # wrap_deepmind, NCHW
    assert unroll["actions"].shape == (3, 2) and set(np.unique(unroll["actions"])) <= set(range(6))
    assert unroll["advantages"].shape == unroll["target_values"].shape == (3, 2) and unroll["valid"].all()
    losses = actor.alg.learn(torch.as_tensor(unroll["obs"].reshape(6, 4, 84, 84), dtype=torch.float32),
                             torch.from_numpy(unroll["actions"].reshape(6)),
                             torch.from_numpy(unroll["advantages"].reshape(6)),
                             torch.from_numpy(unroll["target_values"].reshape(6)), 1e-3, -0.01)
    assert all(math.isfinite(float(x)) for x in losses)


def test_a2c_distributed_actor_envpool_and_gymnasium_unrolls_alike():
    """``--envpool``: the actor's unroll from EnvPoolAtari has the gymnasium path's keys, shapes and dtypes and
    the same first screens; every EnvPool transition is trained on (it resets a game in the same step)."""
    pytest.importorskip("envpool")
    train = load_example("a2c_distributed")
    cfg = train.CONFIGS["atari"]
    unrolls = []
    for use_envpool in (False, True):
        torch.manual_seed(0)
        actor = train.Actor._original("PongNoFrameskip-v4", 2, 3, cfg, 0, use_envpool)
        assert isinstance(actor.envs, train.EnvPoolAtari) is use_envpool
        unrolls.append(actor.sample(actor.alg.model.get_weights()))
    gym_unroll, pool_unroll = unrolls
    assert gym_unroll.keys() == pool_unroll.keys()
    for key in ("obs", "actions", "advantages", "target_values", "valid"):
        assert pool_unroll[key].shape == gym_unroll[key].shape and pool_unroll[key].dtype == gym_unroll[key].dtype
    assert pool_unroll["obs"].shape == (3, 2, 4, 84, 84) and pool_unroll["valid"].all()
    # the same screen but the opponent's paddle and the score, which move during the 1..30 no-op frames (drawn by
    # different generators; parl-core's test_core_envpool_atari.py compares frame by frame)
    assert (pool_unroll["obs"][0] == gym_unroll["obs"][0]).mean() > 0.99


def test_a2c_distributed_envpool_actor_across_lost_lives():
    """Breakout on EnvPool: lost lives end episodes (no bootstrap: with lambda 1 the target of the last step of
    a life is its clipped reward), whole games come back as episode returns, every step is trained on."""
    pytest.importorskip("envpool")
    train = load_example("a2c_distributed")
    torch.manual_seed(0)
    actor = train.Actor._original("BreakoutNoFrameskip-v4", 2, 400, train.CONFIGS["atari"], 0, True)
    lives = []
    step = actor.envs.step

    def recording_step(actions):
        out = step(actions)
        lives.append(out[2].copy())  # terminated [E]: a lost life or the game's end
        return out

    actor.envs.step = recording_step
    unroll = actor.sample(actor.alg.model.get_weights())
    terminated = np.stack(lives)
    assert unroll["valid"].all() and terminated.sum() >= 5  # a random Breakout player loses 5 lives in 400 steps
    returns = unroll["episode_returns"]
    assert len(returns) >= 1 and (returns >= 0).all() and (returns == np.round(returns)).all()  # whole games
    assert set(np.unique(unroll["target_values"][terminated])) <= {0.0, 1.0}  # clipped reward, no bootstrap


def test_a2c_distributed_envpool_tiny_budget(tmp_path):
    """The ``--envpool`` run end to end (the gymnasium path's run is the CartPole one above): one actor, one update."""
    pytest.importorskip("envpool")
    result = run_example("a2c_distributed", tmp_path, "--env", "PongNoFrameskip-v4", "--envpool", "--actors", "1",
                         "--total-steps", "100", "--target-return", "1e9")
    assert result["envpool"] is True and result["envs_per_actor"] == 5 and result["unroll_length"] == 20
    assert result["env_steps"] == 100 and result["updates"] == 1 and result["actors_replaced"] == 0
    assert result["eval_source"] == "train_episodes" and result["resumed"] is False


def test_a2c_distributed_envpool_missing_names_the_extra():
    code = ("import runpy, sys; sys.modules['envpool'] = None; "
            "sys.argv = ['train.py', '--env', 'PongNoFrameskip-v4', '--envpool']; "
            f"runpy.run_path({str(EXAMPLES / 'a2c_distributed' / 'train.py')!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pip install 'parl-core[envpool]'" in proc.stderr


def test_ga3c_actor_and_cnn_on_atari():
    train = load_example("ga3c")
    cfg = train.CONFIGS["atari"]
    actor = train.Actor._original("PongNoFrameskip-v4", 2, cfg, seed=0)
    obs = actor.reset_obs()
    assert obs.shape == (2, 4, 42, 42) and obs.dtype == np.uint8
    next_obs, rewards, terminated, truncated, returns, env_s = actor.step(np.array([0, 1]))
    assert next_obs.shape == obs.shape and rewards.shape == terminated.shape == truncated.shape == (2,)
    assert set(rewards.tolist()) <= {-1.0, 0.0, 1.0} and returns == [] and env_s > 0  # clipped rewards
    logits, value = train.AtariModel(6, 42).policy_and_value(torch.as_tensor(next_obs, dtype=torch.float32))
    assert logits.shape == (2, 6) and value.shape == (2, 1)


def run_killing_an_actor(name, logdir, seed, kill_after_update, timeout_s):
    """Runs the example to its target; once it logs ``update <kill_after_update>``, SIGKILLs actor 0's process.

    Returns:
        (summary, the example's output lines, the killed pid)
    """
    proc = subprocess.Popen(command(name, logdir, "--seed", str(seed)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=str(ROOT), start_new_session=True,
                            env=dict(os.environ, PYTHONHASHSEED="0"))
    watchdog = threading.Timer(timeout_s, lambda: os.killpg(proc.pid, signal.SIGKILL))
    watchdog.start()
    lines, killed = [], None
    try:
        for line in proc.stdout:
            lines.append(line)
            if killed is None and re.search(rf"\bupdate {kill_after_update}, env steps", line):
                pids = [int(m.group(1)) for ln in lines if (m := re.search(r"actor 0 started, pid=(\d+)", ln))]
                assert len(pids) == 1, lines
                killed = pids[0]
                os.kill(killed, signal.SIGKILL)  # an actor process of the cluster this test's subprocess started
        returncode = proc.wait()
    finally:
        watchdog.cancel()
    output = "".join(lines)
    assert returncode == 0, f"{name} exited with {returncode}:\n{output[-5000:]}"
    assert killed is not None, f"the run ended before update {kill_after_update}:\n{output[-3000:]}"
    with open(Path(logdir) / "summary.json") as f:
        result = json.load(f)
    assert result == json.loads(output.strip().splitlines()[-1])  # printed and written alike
    return result, output, killed


@pytest.mark.slow
@pytest.mark.parametrize("name, seed, max_steps", [("a2c_distributed", 1, 500_000), ("ga3c", 1, 1_000_000)])
def test_example_reaches_threshold_although_an_actor_is_killed(name, seed, max_steps, tmp_path):
    result, output, killed = run_killing_an_actor(name, tmp_path, seed, kill_after_update=25, timeout_s=240)
    assert result["reached"] is True, output[-3000:]
    assert result["eval_return_mean"] >= 475.0 and result["eval_source"] == "greedy"
    assert result["env_steps"] <= max_steps
    assert result["actors_replaced"] == 1
    assert re.search(r"actor 0 died \(ActorDiedError: killed by signal 9 \(SIGKILL\)\); starting a replacement",
                     output), output[-3000:]
    restarted = [int(m.group(1)) for m in re.finditer(r"actor 0 started, pid=(\d+)", output)]
    assert len(restarted) == 2 and restarted[0] == killed and restarted[1] != killed
    assert result["updates"] > 25
