"""examples/qmix as real subprocesses: a tiny budget in-process and with 2 remote collectors on the embedded
cluster (exact exit code and summary values), restoring its checkpoint, a killed collector replaced, a remote run
stopped by SIGTERM and resumed, the SMAC id without SMAC, and a learn-to-threshold run marked slow; in process, the
collector's padded episodes and its episodes in progress rebuilt from a checkpoint's state (the bit-exact resume
of in-process runs is tests/test_examples_resume.py's)."""

import csv
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_algorithms_examples import sigterm_when

from parl_core.utils.run import CHECKPOINT_FILE, read_checkpoint

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "qmix" / "train.py"
LBF = "Foraging-8x8-2p-2f-coop-v3"
TINY = ["--total-steps", "600", "--eval-every", "300", "--eval-episodes", "4", "--envs-per-actor", "4",
        "--batch-size", "4"]

import lbforaging  # noqa: E402, F401 (parl-core[marl]; missing fails, never skips)


def load_example():
    """examples/qmix/train.py as a module (``RemoteCollector._original`` is the plain ``Collector``)."""
    spec = importlib.util.spec_from_file_location("example_qmix", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def command(logdir, *args):
    return [sys.executable, str(EXAMPLE), "--seed", "0", "--logdir", str(logdir), "--no-progress", *args]


def run(logdir, *args, timeout=400, expect=0):
    proc = subprocess.run(command(logdir, *args), capture_output=True, text=True, timeout=timeout, cwd=str(ROOT),
                          env=dict(os.environ, PYTHONHASHSEED="0"))
    assert proc.returncode == expect, f"exit {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    if expect:
        return proc
    with open(Path(logdir) / "summary.json") as f:
        result = json.load(f)
    assert result == json.loads(proc.stdout.strip().splitlines()[-1])  # printed and written alike
    return result


def check_tiny(result, logdir, actors, backend="torch"):
    assert result["algorithm"] == "QMIX" and result["env_id"] == LBF and result["actors"] == actors
    assert result["env_version"] == "lbforaging 2.0.0" and "team return = sum over agents" in result["reward_unit"]
    assert result["backend"] == backend and result["envs_per_actor"] == 4 and result["actors_replaced"] == 0
    # the budget: whole collector calls of 4 envs stepped together (episodes of at most 50 steps)
    assert 600 <= result["env_steps"] < 600 + (4 * 50 if actors == 0 else 2 * 4 * 4 * 50)
    assert result["env_steps"] % 4 == 0 and result["total_steps"] == 600
    assert result["episodes"] >= 600 // 50 and 1 <= result["updates"] <= result["episodes"]
    assert result["target_syncs"] == result["updates"] // 200
    assert result["eval_episodes"] == 4 and 0.0 <= result["eval_return_mean"] <= 1.0  # LBF: all food sums to 1
    assert 0.0 <= result["eval_return_std"] <= 0.5 and result["interrupted"] is False and result["reached"] is False
    assert result["wall_s"] > result["learn_s"] > 0 and result["collect_s"] > 0
    assert result["env_steps_per_s"] == pytest.approx(result["env_steps"] / result["wall_s"], rel=0.01)
    with open(Path(logdir) / "curve.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["env_steps"]) for r in rows][-1] == result["env_steps"] and len(rows) >= 2
    assert float(rows[-1]["eval_return_mean"]) == pytest.approx(result["eval_return_mean"])
    assert float(rows[0]["epsilon"]) < 1.0 and all(0.0 <= float(r["eval_return_mean"]) <= 1.0 for r in rows)
    assert (Path(logdir) / "model.ckpt").is_file()
    assert any(p.name.startswith("events.out.tfevents") for p in Path(logdir).iterdir())


def test_tiny_budget_in_process_and_restore(tmp_path):
    result = run(tmp_path / "a", *TINY)
    check_tiny(result, tmp_path / "a", actors=0)
    # the checkpoint restores the trained networks: no training (budget 0), the same greedy evaluation
    again = run(tmp_path / "b", "--total-steps", "0", "--eval-episodes", "4", "--restore",
                str(tmp_path / "a" / "model.ckpt"))
    assert again["env_steps"] == 0 and again["updates"] == 0 and again["eval_episodes"] == 4
    assert again["eval_return_mean"] == result["eval_return_mean"]


def test_tiny_budget_paddle(tmp_path):
    pytest.importorskip("paddle")
    result = run(tmp_path, *TINY, "--backend", "paddle")
    check_tiny(result, tmp_path, actors=0, backend="paddle")


def test_tiny_budget_two_remote_collectors(tmp_path):
    result = run(tmp_path, *TINY, "--actors", "2")
    check_tiny(result, tmp_path, actors=2)
    assert 0.0 < result["actors_ready_s"] < result["wall_s"]


def test_smac_id_without_smac_says_how_to_install(tmp_path):
    proc = run(tmp_path, "--env", "sc2:3m", "--total-steps", "10", expect=1)
    assert "oxwhirl/smac" in proc.stderr and "StarCraft II" in proc.stderr and "SMAC3" in proc.stderr


def test_collector_returns_padded_episodes():
    train = load_example()
    cfg = train.config_for(LBF)
    collector = train.Collector(LBF, 3, 0, "torch", cfg)
    out = collector.run(None, 1.0, 4)
    episodes, lengths = out["episodes"], out["lengths"]
    k = len(lengths)
    assert k >= 4 and out["env_steps"] % 3 == 0 and out["returns"].shape == (k,)
    assert episodes["obs_batch"].shape == (k, 51, 2, 12) and episodes["state_batch"].shape == (k, 51, 24)
    assert episodes["available_actions_batch"].shape == (k, 51, 2, 6) and episodes["actions_batch"].shape == (k, 51, 2)
    for i, length in enumerate(lengths):
        filled = episodes["filled_batch"][i, :, 0]
        assert (filled[:length] == 0).all() and (filled[length:] == 1).all()  # 0...0 1...1
        term = episodes["terminated_batch"][i, :, 0]
        assert term[: length - 1].sum() == 0 and term[length:].sum() == 0
        assert term[length - 1] == 1 or length == 50  # LBF ends at 50 steps by truncation, earlier by clearing the food
        # the final observation / available actions are stored at step `length` (the bootstrap of a truncation)
        assert episodes["available_actions_batch"][i, length].any()
        avail = episodes["available_actions_batch"][i, :length]
        chosen = np.take_along_axis(avail, episodes["actions_batch"][i, :length, :, None], axis=2)
        assert (chosen == 1).all()  # random actions only among the available ones
        assert episodes["reward_batch"][i, :, 0].sum() == pytest.approx(out["returns"][i])
    inputs = train.batch_agent_inputs(episodes["obs_batch"], episodes["actions_batch"], 6)
    assert inputs.shape == (k, 51, 2, 12 + 6 + 2)
    np.testing.assert_array_equal(inputs[:, 0, :, 12:18], 0)  # no last action at an episode's first step
    np.testing.assert_array_equal(inputs[:, 1, :, 12:18].argmax(-1), episodes["actions_batch"][:, 0])
    np.testing.assert_array_equal(inputs[:, :, :, 18:], np.broadcast_to(np.eye(2), (k, 51, 2, 2)))



def test_collector_state_rebuilds_episodes_in_progress():
    """A collector loaded with another's state_dict mid-episode (its envs' episodes out of step) collects the same
    episodes after it: each env is rebuilt by a reset as its episode began and a replay of the episode's actions."""
    train = load_example()
    cfg = train.config_for(LBF)
    a, b = train.Collector(LBF, 3, 0, "torch", cfg), train.Collector(LBF, 3, 0, "torch", cfg)
    b.model.set_weights(a.model.get_weights())
    for collector in (a, b):  # each env ends its episodes at its own step count (lbforaging's step limit)
        for env, limit in zip(collector.envs.envs, (37, 44, 50), strict=True):
            env._env.unwrapped._max_episode_steps = limit
    for _ in range(3):
        a.run(None, 0.5, 1)
    state = a.state_dict()
    assert state["t"].min() < state["t"].max() and state["t"].max() > 0  # episodes in progress, out of step
    b.load_state_dict(state)
    # (each env begun as the saved one: the same generator state and LBF player positions before its reset)
    assert [env.start for env in b.envs.envs] == state["starts"]
    for _ in range(6):
        x, y = a.run(None, 0.5, 2), b.run(None, 0.5, 2)
        assert x["env_steps"] == y["env_steps"]
        np.testing.assert_array_equal(x["lengths"], y["lengths"])
        np.testing.assert_array_equal(x["returns"], y["returns"])
        for key, value in x["episodes"].items():
            np.testing.assert_array_equal(value, y["episodes"][key], err_msg=key)


def test_remote_run_stopped_by_sigterm_resumes(tmp_path):
    """SIGTERM makes a run with 2 remote collectors save a checkpoint and exit with 143; --resume continues its
    counters, buffer and curve with new collectors (not bit-exact) and writes the summary."""
    args = ["--actors", "2", "--total-steps", "2400", "--eval-every", "400", "--eval-episodes", "2",
            "--envs-per-actor", "4", "--batch-size", "4", "--checkpoint-every", "0"]
    with open(tmp_path / "first.log", "w") as log:
        proc = subprocess.Popen(command(tmp_path, *args), stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT),
                                start_new_session=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    deadline = time.monotonic() + 400
    try:
        # the learner only (SIGTERM): it saves at its next checkpoint point and exits
        sigterm_when(proc, lambda: (tmp_path / "curve.csv").is_file()
                     and len((tmp_path / "curve.csv").read_text().splitlines()) >= 2,
                     400, "evaluation row", (tmp_path / "first.log").read_text, tail=4000)
        returncode = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    output = (tmp_path / "first.log").read_text()
    assert returncode == 128 + signal.SIGTERM, output[-4000:]
    assert "SIGTERM: saved" in output and not (tmp_path / "summary.json").exists()
    saved = read_checkpoint(tmp_path / CHECKPOINT_FILE)
    counters = saved["state"]["counters"]
    assert not saved["meta"]["finished"] and 400 <= counters["env_steps"] < 2400 and counters["generation"] == [1, 1]
    assert saved["state"]["buffer"]["size"] == counters["episodes"] > 0 and counters["updates"] > 0
    with open(tmp_path / "curve.csv") as f:
        before = list(csv.DictReader(f))

    result = run(tmp_path, *args, "--resume", str(tmp_path))
    assert 2400 <= result["env_steps"] < 2400 + 2 * 4 * 4 * 50 and result["actors"] == 2
    assert result["episodes"] > counters["episodes"] and result["updates"] > counters["updates"]
    assert result["eval_episodes"] == 2 and result["interrupted"] is False and result["actors_replaced"] == 0
    with open(tmp_path / "curve.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[:len(before)] == before and len(rows) > len(before)  # the curve continues after its saved rows
    steps = [int(r["env_steps"]) for r in rows]
    assert steps == sorted(set(steps)) and steps[-1] == result["env_steps"]
    assert float(rows[-1]["epsilon"]) < float(before[-1]["epsilon"])  # the schedule went on from the saved steps
    assert read_checkpoint(tmp_path / CHECKPOINT_FILE)["meta"]["finished"]

def test_killed_collector_is_replaced(tmp_path):
    proc = subprocess.Popen(command(tmp_path, "--actors", "2", "--total-steps", "4000", "--eval-every", "800",
                                    "--eval-episodes", "2", "--envs-per-actor", "4", "--batch-size", "4"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(ROOT),
                            start_new_session=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    watchdog = threading.Timer(400, lambda: os.killpg(proc.pid, signal.SIGKILL))
    watchdog.start()
    lines, killed = [], None
    try:
        for line in proc.stdout:
            lines.append(line)
            if killed is None and re.search(r"qmix INFO env steps \d+", line):
                pids = [int(m.group(1)) for ln in lines if (m := re.search(r"actor 0 started, pid=(\d+)", ln))]
                assert len(pids) == 1, lines
                killed = pids[0]
                os.kill(killed, signal.SIGKILL)  # a collector process of the cluster this test's subprocess started
        returncode = proc.wait()
    finally:
        watchdog.cancel()
    output = "".join(lines)
    assert returncode == 0 and killed is not None, output[-4000:]
    result = json.loads(output.strip().splitlines()[-1])
    assert result["actors_replaced"] == 1 and result["env_steps"] >= 4000
    assert re.search(r"actor 0 died \(ActorDiedError: .*SIGKILL", output), output[-3000:]
    restarted = [int(m.group(1)) for m in re.finditer(r"actor 0 started, pid=(\d+)", output)]
    assert len(restarted) == 2 and restarted[0] == killed and restarted[1] != killed


# The example's whole training loop, on a cooperative task small enough to learn in seconds: 2 agents, 5-step
# episodes, each step's observation (and state) is the one-hot "target" action; the team reward is 1 when both
# agents take it (so the optimum is 5 per episode, random play 5/9). Driven as a subprocess that swaps the example's
# make_env for this env (LBF's 8x8 tasks take ~10^5 steps before QMIX beats random: not a test's budget).
TOY_DRIVER = '''
import importlib.util
import numpy as np
spec = importlib.util.spec_from_file_location("example_qmix", {example!r})
train = importlib.util.module_from_spec(spec)
spec.loader.exec_module(train)


class CoordinationEnv:
    n_agents, agents, obs_dim, obs_dims, state_dim, discrete, n_actions = 2, ["a", "b"], 3, [3, 3], 3, True, 3
    act_dim, act_dims, episode_limit, env_id, env_version = 0, None, 5, "coordination", "test 0"
    reward_unit = "team reward split over the agents; team return = sum over agents"
    observation_spaces = action_spaces = action_low = action_high = None

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def _obs(self):
        self.target = self.rng.integers(3)
        one_hot = np.eye(3, dtype=np.float32)[self.target]
        return np.stack([one_hot, one_hot]), {{"state": one_hot, "avail_actions": np.ones((2, 3), bool)}}

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self._obs()

    def step(self, actions):
        reward = float(actions[0] == self.target and actions[1] == self.target)
        self.t += 1
        obs, info = self._obs()
        return obs, np.float32([reward / 2, reward / 2]), False, self.t >= 5, info

    def close(self):
        pass


train.make_env = lambda env_id, seed=None: CoordinationEnv()
train.main()
'''


@pytest.mark.slow
def test_example_learns_a_coordination_task_to_its_optimum(tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(TOY_DRIVER.format(example=str(EXAMPLE)))
    proc = subprocess.run([sys.executable, str(driver), "--env", "coordination", "--seed", "0", "--total-steps", "8000",
                           "--eval-every", "500", "--eval-episodes", "20", "--epsilon-anneal-steps", "2000",
                           "--target-return", "4.99", "--logdir", str(tmp_path / "run"), "--no-progress"],
                          capture_output=True, text=True, timeout=400, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["reached"] is True and result["eval_return_mean"] == 5.0 and result["eval_episodes"] == 20
    assert result["env_steps"] <= 4000 and result["updates"] >= 1 and result["reward_unit"].startswith("team reward")
