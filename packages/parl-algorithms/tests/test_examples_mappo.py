"""examples/mappo/train.py as real subprocesses on tiny budgets (exact exit code and summary values): spread in this
process with a checkpoint restored, spread on 2 remote collectors (embedded cluster), stopped by SIGTERM and resumed,
speaker-listener with one model per agent (heterogeneous observations and action counts), LBF on paddle, spread with
Box actions, an old MPE name refused; in process, a dead collector replaced, a collector's mid-episode checkpoint
replayed exactly (LBF); and a learn-to-threshold run on spread marked slow. (The bit-exact resume of a killed
in-process run: tests/test_examples_resume.py.)"""

import csv
import importlib.util
import json
import math
import signal
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest
from test_algorithms_examples import EXAMPLES, ROOT, run_example, sigterm_when

import parl_core

SPREAD_UNIT = "per-agent return (team return / n_agents)"


def tiny(logdir, *args):
    """8 envs x 25 steps = 200 env steps per update; evaluations of 4 episodes every 400 env steps."""
    return run_example("mappo", logdir, "--num-envs", "8", "--eval-every", "400", "--eval-episodes", "4", *args,
                       timeout=600)


def check_common(result, env_steps, actors=0):
    assert result["algorithm"] == "MAPPO" and result["resumed"] is False
    assert result["env_steps"] == env_steps and result["updates"] == env_steps // 200
    assert result["num_envs"] == 8 and result["unroll_length"] == 25 and result["ppo_epoch"] == 15
    assert result["actors"] == actors and result["actors_replaced"] == 0
    assert result["eval_episodes"] == 4 and math.isfinite(result["eval_return_std"])
    assert result["wall_s"] > 0 and math.isclose(result["env_steps_per_s"], env_steps / result["wall_s"], rel_tol=0.01)


def curve_rows(logdir):
    with open(Path(logdir) / "curve.csv") as f:
        return list(csv.DictReader(f))


def test_spread_in_process_then_restore(tmp_path):
    result = tiny(tmp_path / "run", "--total-steps", "800")
    check_common(result, 800)
    assert result["env_id"] == "mpe2:simple_spread_v3" and result["env_version"] == "mpe2 1.1.1"
    assert result["env_kwargs"] == {"N": 3, "local_ratio": 0.0, "max_cycles": 25, "continuous_actions": False}
    assert result["reward_unit"].startswith(SPREAD_UNIT) and "local_ratio=0" in result["reward_unit"]
    assert result["n_agents"] == 3 and result["shared_params"] is True and result["use_popart"] is True
    # per-agent returns of 25 steps of negative rewards: random play is about -53
    assert -150.0 < result["eval_return_mean"] < 0.0 and -150.0 < result["train_return_mean"] < 0.0
    rows = curve_rows(tmp_path / "run")
    assert [int(r["env_steps"]) for r in rows] == [400, 800]
    assert float(rows[-1]["eval_return_mean"]) == pytest.approx(result["eval_return_mean"])
    assert any(p.name.startswith("events.out.tfevents") for p in (tmp_path / "run").iterdir())
    checkpoint = tmp_path / "run" / "checkpoint"
    # one shared model: PARL's model file and the full state beside it
    assert sorted(p.name for p in checkpoint.iterdir()) == ["agent_0.ckpt", "agent_0.ckpt.state"]

    restored = tiny(tmp_path / "restored", "--total-steps", "200", "--restore", str(checkpoint))
    check_common(restored, 200)


def test_spread_on_two_remote_collectors(tmp_path):
    result = tiny(tmp_path, "--total-steps", "400", "--actors", "2")
    check_common(result, 400, actors=2)
    assert 0.0 < result["actors_ready_s"] < result["wall_s"]
    assert -150.0 < result["eval_return_mean"] < 0.0


def test_remote_collectors_stopped_by_sigterm_then_resumed(tmp_path):
    """SIGTERM saves a checkpoint between two updates and exits with 143; --resume goes on to the budget with new
    collectors (new episodes and seeds: not bit-exact), the learner, counters and curve continuing."""
    from parl_core.utils.run import read_checkpoint

    cmd = [sys.executable, str(EXAMPLES / "mappo" / "train.py"), "--seed", "0", "--logdir", str(tmp_path),
           "--no-progress", "--actors", "2", "--num-envs", "8", "--eval-every", "400", "--eval-episodes", "4",
           "--total-steps", "4000", "--checkpoint-every", "0.001"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    sigterm_when(proc, (tmp_path / "checkpoint.npz").exists, 240, "checkpoint", proc.stderr.read)
    stderr = proc.communicate(timeout=120)[1]
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert not (tmp_path / "summary.json").exists()  # a stop writes the checkpoint; the summary comes at the end
    stopped = read_checkpoint(tmp_path / "checkpoint.npz")
    step, counters = stopped["meta"]["step"], stopped["state"]["counters"]
    assert 0 < step < 4000 and not stopped["meta"]["finished"]
    assert counters["env_steps"] == step and counters["updates"] == step // 200 and counters["generation"] == [1, 1]
    kept = [row for row in curve_rows(tmp_path) if int(row["env_steps"]) <= step]

    done = subprocess.run([*cmd, "--resume", str(tmp_path)], capture_output=True, text=True, timeout=400,
                          cwd=str(ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"at step {step}" in done.stdout + done.stderr  # (the harness logs where it resumed)
    result = json.loads((tmp_path / "summary.json").read_text())
    assert (result["env_steps"], result["updates"], result["resumed"]) == (4000, 20, True)
    assert result["actors"] == 2 and result["actors_replaced"] == 0 and -150.0 < result["eval_return_mean"] < 0.0
    rows = curve_rows(tmp_path)
    assert [int(r["env_steps"]) for r in rows] == list(range(400, 4001, 400))  # each evaluation once
    assert rows[:len(kept)] == kept  # the rows up to the checkpoint stand; the clock goes on from there
    walls = [float(r["wall_s"]) for r in rows]
    assert walls == sorted(walls)
    final = read_checkpoint(tmp_path / "checkpoint.npz")
    assert final["meta"]["finished"] and final["state"]["counters"]["generation"] == [2, 2]  # new collectors


def test_speaker_listener_with_one_model_per_agent(tmp_path):
    result = tiny(tmp_path, "--env", "mpe2:simple_speaker_listener_v4", "--total-steps", "400", "--separate-params")
    check_common(result, 400)
    assert result["n_agents"] == 2 and result["shared_params"] is False
    assert result["reward_unit"].startswith(SPREAD_UNIT)
    assert -300.0 < result["eval_return_mean"] < 0.0
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == ["agent_0.ckpt", "agent_0.ckpt.state",
                                                                            "agent_1.ckpt", "agent_1.ckpt.state"]


def test_lbf_on_paddle(tmp_path):
    pytest.importorskip("paddle")
    result = tiny(tmp_path, "--env", "Foraging-8x8-2p-2f-coop-v3", "--total-steps", "400", "--backend", "paddle")
    check_common(result, 400)
    assert result["backend"] == "paddle" and result["env_version"].startswith("lbforaging ")
    assert result["reward_unit"].startswith("team return (summed over agents)")
    assert 0.0 <= result["eval_return_mean"] <= 1.0  # LBF's normalised team return


@pytest.mark.parametrize("env_id, unit, low, high", [
    ("mpe2:simple_reference_v3", SPREAD_UNIT, -300.0, 0.0),  # 2 agents, Discrete(50) (move x say)
    ("rware-tiny-2ag-v2", "team return (summed over agents)", 0.0, 10.0),  # 500-step episodes, deliveries
])
def test_reference_and_rware(tmp_path, env_id, unit, low, high):
    result = tiny(tmp_path, "--env", env_id, "--total-steps", "200")
    check_common(result, 200)
    assert result["n_agents"] == 2 and result["reward_unit"].startswith(unit)
    assert low <= result["eval_return_mean"] <= high


def test_spread_with_box_actions(tmp_path):
    result = tiny(tmp_path, "--total-steps", "200", "--continuous-actions", "--no-popart")
    check_common(result, 200)
    assert result["env_kwargs"]["continuous_actions"] is True and result["use_popart"] is False
    assert -150.0 < result["eval_return_mean"] < 0.0


def test_old_mpe_name_is_refused_with_the_mpe2_id(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "mappo" / "train.py"), "--env", "simple_spread_v2",
                           "--logdir", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300,
                          cwd=str(ROOT))
    assert proc.returncode == 1
    assert "make_multiagent_env('mpe2:simple_spread_v3')" in proc.stderr


def load_example():
    spec = importlib.util.spec_from_file_location("example_mappo", EXAMPLES / "mappo" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dead_collector_is_replaced_and_asked_again():
    """The example's round: ``ActorPool.call_all("sample", weights)`` over its collectors."""
    from parl_remote import ActorDiedError, ActorPool

    def future(value=None, error=None):
        f = Future()
        f.set_exception(error) if error else f.set_result(value)
        return f

    class FakeActor:
        def __init__(self, name, dies=False):
            self.name, self.dies, self.calls = name, dies, []

        def sample(self, weights):
            self.calls.append(weights)
            if self.dies:
                return future(error=ActorDiedError("actor died", cause="killed by signal 9 (SIGKILL)"))
            return future({"from": self.name})

    started = []

    def new_actor(slot):
        started.append(slot)
        return FakeActor("ab"[slot], dies=slot == 1) if len(started) <= 2 else FakeActor(f"replacement-{slot}")

    actors = ActorPool(new_actor, 2)
    unrolls = actors.call_all("sample", ["w"])
    assert unrolls == [{"from": "a"}, {"from": "replacement-1"}] and actors.replacements == 1
    assert sorted(started) == [0, 1, 1]
    assert actors[1].name == "replacement-1" and actors[1].calls == [["w"]]  # the weights go with the retry


def test_collector_unroll_layout():
    train = load_example()
    # the backend this test process already uses (a paddle test may have run first: the choice is per process)
    spec = dict(backend=parl_core.get_backend(), shared=True, n_agents=3, obs_dim=18, state_dim=54, act_dim=5,
                continuous=False, use_popart=True)
    collector = train.Collector("mpe2:simple_spread_v3", dict(N=3, local_ratio=0.0, max_cycles=25), 2, 30, spec,
                                seed=0)
    unroll = collector.sample()
    assert unroll["obs"].shape == (30, 2, 3, 18) and unroll["state"].shape == (30, 2, 54)
    assert unroll["actions"].shape == (30, 2, 3) and unroll["values"].shape == (31, 2, 3)
    # every episode is cut at 25 steps: step 24 ends both envs by truncation and bootstraps from V(final state)
    assert unroll["truncated"][24].all() and not unroll["truncated"][:24].any() and not unroll["terminated"].any()
    assert (unroll["final_values"][24] != 0).all() and (unroll["final_values"][:24] == 0).all()
    assert unroll["episode_returns"].shape == (2, 3)
    np.testing.assert_allclose(unroll["episode_returns"], unroll["rewards"][:25].sum(0), rtol=1e-5)
    # shared model: every agent's value row differs only by the agent id; spread's reward is global
    assert (unroll["rewards"] == unroll["rewards"][..., :1]).all()


def test_collector_checkpoint_mid_episode_replays_exactly(tmp_path):
    """A collector's checkpoint in the middle of LBF episodes (the second ones, started by the vector env's
    auto-reset from each env's generator; LBF's steps draw from it too): a new collector restored from it plays the
    same next unroll, bit for bit."""
    from parl_core.utils.run import Checkpointer, RunLog

    train = load_example()
    env_id = "Foraging-8x8-2p-2f-coop-v3"
    probe = train.make_multiagent_env(env_id)
    spec = dict(backend=parl_core.get_backend(), shared=True, n_agents=probe.n_agents, obs_dim=probe.obs_dim,
                state_dim=probe.state_dim, act_dim=probe.n_actions, continuous=False, use_popart=True)
    first = train.Collector(env_id, {}, 2, 30, spec, seed=0)
    first.sample()
    first.sample()  # 60 steps: into each env's second episode (LBF: at most 50 steps)
    for env in first.state_dict()["envs"]:
        assert env["start"]["seed"] is None and env["start"]["rng"] is not None and len(env["actions"]) > 0
    ckpt = Checkpointer(RunLog(tmp_path), every_min=0)
    ckpt.register(collector=first)
    ckpt.save(120)  # (with torch's or paddle's generator, from which the policy samples)
    expected = first.sample()

    second = train.Collector(env_id, {}, 2, 30, spec, seed=99, policies=first.policies)
    resumed = Checkpointer(RunLog(tmp_path), every_min=0, resume=True)
    resumed.register(collector=second)
    assert resumed.load() == 120
    got = second.sample()
    assert expected.keys() == got.keys()
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
    assert expected["rewards"].shape == (30, 2, 2)


@pytest.mark.slow
def test_spread_learns_above_random(tmp_path):
    # random play: -52.9 per agent (mean of 200 episodes); after 24k env steps (30 updates of 32 envs x 25
    # steps) 5 seeds of the 500k runs evaluated -39.1 .. -43.0 over 100 episodes (examples/mappo/README.md); the mean
    # of 32 greedy episodes has a standard error of about 2
    result = run_example("mappo", tmp_path, "--total-steps", "24000", "--eval-every", "24000", "--eval-episodes", "32",
                         timeout=900)
    assert result["env_steps"] == 24000 and result["updates"] == 30
    assert result["eval_return_mean"] > -47.0, result
