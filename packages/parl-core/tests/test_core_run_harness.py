"""parl_core.utils.run: RunLog (curve rows cut back on resume, summary.json), Checkpointer (exact round trip of
registered state, SIGTERM / SIGINT handling, refusal of missing, damaged and foreign checkpoints) and env_state."""

import csv
import json
import os
import random
import signal

import numpy as np
import pytest

from parl_core.utils import LinearDecayScheduler, PiecewiseScheduler, ReplayMemory
from parl_core.utils.run import (
    CHECKPOINT_FILE,
    Checkpointer,
    CheckpointError,
    RunFinished,
    RunLog,
    env_state,
    load_env_state,
    read_checkpoint,
)

gym = pytest.importorskip("gymnasium")


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _setup(logdir, resume=False, config=None):
    run = RunLog(logdir)
    ckpt = Checkpointer(run, every_min=0, resume=resume, config=config or {"seed": 0})
    rng = np.random.default_rng(1)
    memory = ReplayMemory(100, 3, 1, seed=2)
    sched = LinearDecayScheduler(1.0, 50)
    piece = PiecewiseScheduler([(0, 1.0), (5, 0.5)])
    ckpt.register(rng=rng, memory=memory, sched=sched, piece=piece, py=random.Random(3))
    c = ckpt.track(step=0, returns=[], obs=np.zeros(3, np.float32), flag=False, pair=(1, 2.5))
    return run, ckpt, rng, memory, sched, piece, c


def _advance(run, rng, memory, sched, piece, c, n):
    for _ in range(n):
        c.step += 1
        memory.append(rng.normal(size=3), [rng.random()], rng.random(), rng.normal(size=3), False)
        sched.step()
        piece.step()
        c.returns.append(float(rng.random()))
        c.obs = rng.normal(size=3).astype(np.float32)
        run.row({"env_steps": c.step, "value": round(c.returns[-1], 6)})


def test_resume_continues_exactly_and_cuts_the_curve_back(tmp_path):
    straight, killed = tmp_path / "a", tmp_path / "b"
    run, ckpt, rng, memory, sched, piece, c = _setup(straight)
    ckpt.start()
    _advance(run, rng, memory, sched, piece, c, 10)
    expected = (memory.sample_batch(4), sched.get_value(), piece.get_value(), list(c.returns), _rows(run.curve_path))
    ckpt.finish(c.step)
    run.close()

    run, ckpt, rng, memory, sched, piece, c = _setup(killed)
    ckpt.start()
    _advance(run, rng, memory, sched, piece, c, 4)
    ckpt.save(c.step)
    _advance(run, rng, memory, sched, piece, c, 3)  # rows written after the checkpoint, then a "kill"
    ckpt.close()
    run.close()
    assert len(_rows(run.curve_path)) == 8

    run, ckpt, rng, memory, sched, piece, c = _setup(killed, resume=True)
    assert ckpt.start() is True
    assert c.step == 4 and c.pair == (1, 2.5) and c.obs.dtype == np.float32
    assert len(_rows(run.curve_path)) == 5  # header + the 4 rows of the checkpoint
    _advance(run, rng, memory, sched, piece, c, 6)
    got = (memory.sample_batch(4), sched.get_value(), piece.get_value(), list(c.returns), _rows(run.curve_path))
    for a, b in zip(expected[0], got[0], strict=True):
        assert a.tobytes() == b.tobytes()
    assert expected[1:] == got[1:]
    ckpt.close()


def test_summary_is_written_whole_and_needs_the_standard_fields(tmp_path):
    run = RunLog(tmp_path)
    with pytest.raises(ValueError, match="eval_episodes"):
        run.write_summary({"eval_return_mean": 1.0, "env_steps": 3})
    out = run.write_summary({"eval_return_mean": 1.0, "eval_episodes": 2, "env_steps": 3, "extra": "x"})
    assert out["wall_s"] >= 0
    assert json.loads((tmp_path / "summary.json").read_text()) == out
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_damaged_missing_foreign_and_finished_checkpoints(tmp_path):
    run, ckpt, *_ = _setup(tmp_path)
    with pytest.raises(CheckpointError, match=f"no checkpoint at .*{CHECKPOINT_FILE}.*without --resume"):
        _setup(tmp_path, resume=True)[1].start()
    ckpt.save(0)
    path = tmp_path / CHECKPOINT_FILE
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=f"{path}.*damaged"):
        _setup(tmp_path, resume=True)[1].start()
    path.write_bytes(b"\0" * len(data))
    with pytest.raises(CheckpointError, match="damaged"):
        read_checkpoint(path)
    ckpt.save(0)
    with pytest.raises(CheckpointError, match="other settings.*seed: 0 there, 1 here"):
        _setup(tmp_path, resume=True, config={"seed": 1})[1].start()
    # settings that may change between the parts of a run
    _setup(tmp_path, resume=True, config={"seed": 0, "logdir": "elsewhere", "checkpoint_every": 3})[1].start()
    ckpt.finish(0)
    with pytest.raises(RunFinished) as finished:  # (nothing to resume: a clean exit)
        _setup(tmp_path, resume=True)[1].start()
    assert finished.value.code == 0


def test_checkpoint_holds_no_pickle_and_refuses_objects_it_cannot_store(tmp_path):
    run, ckpt, *_ = _setup(tmp_path)
    ckpt.save(0)
    with np.load(tmp_path / CHECKPOINT_FILE, allow_pickle=False) as npz:
        assert all(npz[k].dtype != object for k in npz.files)
    c = ckpt.track(thing=object())
    with pytest.raises(TypeError, match="checkpoint.state.counters.thing.*cannot go into a checkpoint"):
        ckpt.save(0)
    del c
    with pytest.raises(TypeError, match="no state_dict"):
        ckpt.register(other=object())
    with pytest.raises(ValueError, match="taken"):
        ckpt.register(rng=np.random.default_rng())
    with pytest.raises(ValueError, match=">= 0"):
        Checkpointer(run, every_min=-1)


def test_sigterm_saves_at_the_next_safe_point_and_exits(tmp_path):
    run, ckpt, rng, memory, sched, piece, c = _setup(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    ckpt.start()
    c.step = 7
    os.kill(os.getpid(), signal.SIGTERM)
    assert ckpt.stop_requested
    with pytest.raises(SystemExit) as exit_info:
        ckpt.maybe_save(c.step)
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert read_checkpoint(tmp_path / CHECKPOINT_FILE)["meta"]["step"] == 7
    assert signal.getsignal(signal.SIGTERM) is before  # handlers put back


def test_second_signal_interrupts_at_once(tmp_path):
    _, ckpt, *_ = _setup(tmp_path)
    ckpt.start()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        ckpt.close()


def test_periodic_checkpoints(tmp_path):
    run = RunLog(tmp_path)
    ckpt = Checkpointer(run, every_min=1e-9)
    ckpt.track(step=0)
    ckpt.start()
    assert ckpt.maybe_save(1) and ckpt.maybe_save(2)
    ckpt.close()
    assert read_checkpoint(tmp_path / CHECKPOINT_FILE)["meta"]["step"] == 2


def _roll(env, actions, vector=False):
    out = []
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        out.append((np.asarray(obs).tobytes(), np.asarray(reward).tobytes(), np.asarray(terminated).tobytes(),
                    np.asarray(truncated).tobytes()))
        if not vector and (terminated or truncated):
            env.reset()
    return out


@pytest.mark.parametrize("make", [
    lambda: gym.make("CartPole-v1"),
    lambda: gym.make("Pendulum-v1"),
    lambda: gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="vector_entry_point"),
    lambda: gym.make_vec("Pendulum-v1", num_envs=2, vectorization_mode="sync"),
    lambda: gym.make("InvertedDoublePendulum-v5"),
], ids=["cartpole", "pendulum", "cartpole-vector", "pendulum-sync-vector", "mujoco"])
def test_env_state_restores_mid_episode(make, tmp_path):
    try:
        env, twin = make(), make()
    except (ImportError, gym.error.DependencyNotInstalled) as err:
        pytest.skip(str(err))
    vector = hasattr(env, "num_envs")
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(300)]
    env.reset(seed=5)
    twin.reset(seed=99)
    _roll(env, actions[:37], vector)
    state = env_state(env)
    run = RunLog(tmp_path)  # through the file format as well
    ckpt = Checkpointer(run, every_min=0)
    ckpt.register(env=env)
    ckpt.save(0)
    saved = read_checkpoint(tmp_path / CHECKPOINT_FILE)["state"]["env"]
    load_env_state(twin, saved)
    assert _roll(env, actions[37:], vector) == _roll(twin, actions[37:], vector)
    assert [entry["class"] for entry in state] == [entry["class"] for entry in saved]
    with pytest.raises(ValueError, match="layers"):
        load_env_state(gym.make("Acrobot-v1"), saved)


def test_schedulers_state_dict_round_trip():
    a = PiecewiseScheduler([(0, 1.0), (10, 0.5)])
    a.step(12)
    b = PiecewiseScheduler([(0, 1.0), (10, 0.5)])
    b.load_state_dict(a.state_dict())
    assert b.get_value() == 0.5 and b.step() == a.step()
    with pytest.raises(ValueError, match="cur_step"):
        b.load_state_dict({})
