"""ReplayMemory, LinearDecayScheduler, PiecewiseScheduler, WindowStat / TimeStat, CSVLogger."""

import csv

import numpy as np
import pytest

from parl_core.utils import (
    CSVLogger,
    LinearDecayScheduler,
    PiecewiseScheduler,
    ReplayMemory,
    TimeStat,
    WindowStat,
)


def fill(rpm, n, start=0):
    for i in range(start, start + n):
        obs = np.full(rpm.obs_shape, i, dtype=np.float32)
        rpm.append(obs, i % 2, float(i), obs + 1, i % 3 == 0)


def test_replay_memory_parl_layout_and_wraparound():
    rpm = ReplayMemory(max_size=5, obs_dim=3, act_dim=0, seed=0)
    assert rpm.size() == 0 and len(rpm) == 0
    fill(rpm, 7)
    assert len(rpm) == 5
    # ring buffer: entries 5 and 6 overwrote slots 0 and 1
    assert sorted(rpm.reward.tolist()) == [2.0, 3.0, 4.0, 5.0, 6.0]
    obs, act, rew, next_obs, term = rpm.sample_batch(64)
    assert obs.shape == (64, 3) and obs.dtype == np.float32
    assert act.shape == (64,) and act.dtype == np.int32
    assert rew.shape == (64,) and term.dtype == np.bool_
    np.testing.assert_array_equal(obs[:, 0], rew)  # transitions stay aligned
    np.testing.assert_array_equal(next_obs, obs + 1)
    np.testing.assert_array_equal(act, rew.astype(int) % 2)
    np.testing.assert_array_equal(term, rew.astype(int) % 3 == 0)
    assert set(rew.tolist()) == {2.0, 3.0, 4.0, 5.0, 6.0}  # uniform over all stored transitions


def test_replay_memory_seeded_sampling_is_reproducible():
    a, b = ReplayMemory(100, 2, 1, seed=7), ReplayMemory(100, 2, 1, seed=7)
    for rpm in (a, b):
        for i in range(50):
            rpm.append([i, i], [0.5], 1.0, [i, i], False)
    np.testing.assert_array_equal(a.sample_batch(10)[0], b.sample_batch(10)[0])
    assert a.sample_batch(1)[1].shape == (1, 1) and a.action.dtype == np.float32


def test_replay_memory_image_observations_with_uint8():
    rpm = ReplayMemory(10, (4, 4, 2), 0, obs_dtype=np.uint8)
    frame = np.full((4, 4, 2), 255, dtype=np.uint8)
    rpm.append(frame, 1, 1.0, frame, False)
    obs = rpm.sample_batch(3)[0]
    assert obs.shape == (3, 4, 4, 2) and obs.dtype == np.uint8 and obs.max() == 255


def test_replay_memory_validates_appended_shapes():
    rpm = ReplayMemory(10, 3, 0)
    with pytest.raises(ValueError, match=r"obs has shape \(2, 3\), expected \(3,\)"):
        rpm.append(np.zeros((2, 3)), 0, 0.0, np.zeros(3), False)
    with pytest.raises(ValueError, match="act has shape"):
        rpm.append(np.zeros(3), [0, 1], 0.0, np.zeros(3), False)
    with pytest.raises(TypeError, match="numeric"):
        rpm.append(np.array(["a", "b", "c"]), 0, 0.0, np.zeros(3), False)
    with pytest.raises(ValueError, match="empty"):
        rpm.sample_batch(1)
    with pytest.raises(ValueError, match="max_size"):
        ReplayMemory(0, 3, 0)
    with pytest.raises(TypeError, match="obs_dim"):
        ReplayMemory(10, "3", 0)


@pytest.mark.parametrize("sizes", [[3], [4, 4], [7], [2, 9, 1], [12]])
def test_replay_memory_extend_equals_appending_in_order(sizes):
    # batches that fit, wrap around the ring, and exceed max_size give the same buffer as appends
    one, many = ReplayMemory(5, (2, 2), 3, seed=0), ReplayMemory(5, (2, 2), 3, seed=0)
    start = 0
    for n in sizes:
        idx = np.arange(start, start + n)
        obs = np.repeat(idx.astype(np.float32), 4).reshape(n, 2, 2)
        act = np.repeat(idx.astype(np.float32) / 10, 3).reshape(n, 3)
        rew, term = idx.astype(np.float32), idx % 3 == 0
        many.extend(obs, act, rew, obs + 1, term)
        for i in range(n):
            one.append(obs[i], act[i], rew[i], obs[i] + 1, term[i])
        start += n
        assert (len(many), many._curr_pos) == (len(one), one._curr_pos)
        for field in ("obs", "action", "reward", "next_obs", "terminal"):
            np.testing.assert_array_equal(getattr(many, field), getattr(one, field))
    assert float(many.reward.max()) == start - 1  # the newest transition is stored


def test_replay_memory_extend_validates_shapes():
    rpm = ReplayMemory(10, 3, 0)
    with pytest.raises(ValueError, match=r"obs has shape \(3,\), expected \[N, \*\(3,\)\]; use append"):
        rpm.extend(np.zeros(3), 0, 0.0, np.zeros(3), False)
    with pytest.raises(ValueError, match=r"reward has shape \(3,\), expected \(2,\).*N=2"):
        rpm.extend(np.zeros((2, 3)), [0, 1], np.zeros(3), np.zeros((2, 3)), [False, True])
    with pytest.raises(TypeError, match="extend: act must be numeric"):
        rpm.extend(np.zeros((2, 3)), ["a", "b"], np.zeros(2), np.zeros((2, 3)), [False, True])
    assert len(rpm) == 0  # nothing stored by a rejected batch


def test_replay_memory_save_load_round_trip(tmp_path):
    rpm = ReplayMemory(8, 3, 0)
    fill(rpm, 11)
    rpm.save(tmp_path / "rpm")  # numpy adds .npz
    other = ReplayMemory(8, 3, 0)
    other.load(tmp_path / "rpm")
    assert len(other) == 8
    for name in ("obs", "action", "reward", "next_obs", "terminal"):
        np.testing.assert_array_equal(getattr(other, name), getattr(rpm, name))
    other.append(np.zeros(3), 1, -1.0, np.zeros(3), True)  # continues at the same ring position
    assert other.reward[rpm._curr_pos] == -1.0

    small = ReplayMemory(20, 3, 0)
    small.load(tmp_path / "rpm.npz")
    assert len(small) == 8
    small.append(np.zeros(3), 1, -5.0, np.zeros(3), True)
    assert small.reward[8] == -5.0 and len(small) == 9


def test_replay_memory_load_errors(tmp_path):
    rpm = ReplayMemory(8, 3, 0)
    with pytest.raises(FileNotFoundError, match="ReplayMemory.save"):
        rpm.load(tmp_path / "missing.npz")
    fill(rpm, 4)
    rpm.save(tmp_path / "rpm.npz")
    with pytest.raises(ValueError, match=r"obs \(4, 3\) \(expected \(4, 5\)\)"):
        ReplayMemory(8, 5, 0).load(tmp_path / "rpm.npz")
    with pytest.raises(ValueError, match="max_size >= 4"):
        ReplayMemory(2, 3, 0).load(tmp_path / "rpm.npz")


def test_replay_memory_load_from_d4rl():
    n = 6
    dataset = {"observations": np.ones((n, 3)), "actions": np.zeros((n, 2)), "rewards": np.arange(n),
               "next_observations": np.ones((n, 3)), "terminals": np.zeros(n)}
    rpm = ReplayMemory(10, 3, 2)
    rpm.load_from_d4rl(dataset)
    assert len(rpm) == n and rpm.reward[:n].tolist() == list(range(n))
    with pytest.raises(KeyError, match="rewards"):
        rpm.load_from_d4rl({k: v for k, v in dataset.items() if k != "rewards"})


def test_linear_decay_scheduler():
    sched = LinearDecayScheduler(1.0, 10)
    assert sched.get_value() == 1.0
    assert sched.step() == pytest.approx(0.9)
    assert sched.step(4) == pytest.approx(0.5)
    assert sched.step(100) == 0.0  # clamped
    assert sched.step() == 0.0
    with pytest.raises(ValueError, match="step_num"):
        sched.step(0)
    with pytest.raises(ValueError, match="max_steps"):
        LinearDecayScheduler(1.0, 0)


def test_piecewise_scheduler_single_steps():
    sched = PiecewiseScheduler([(0, 1.0), (3, 0.5), (5, 0.1)])
    assert sched.get_value() == 1.0
    assert [sched.step() for _ in range(6)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]


def test_piecewise_scheduler_jump_over_several_boundaries():
    sched = PiecewiseScheduler([(0, 1.0), (10, 0.5), (20, 0.25), (30, 0.1)])
    assert sched.step(25) == 0.25  # PARL 2.x returned 0.5 here (one segment per call)
    assert sched.step(100) == 0.1
    fresh = PiecewiseScheduler([(0, 1.0), (10, 0.5), (20, 0.25), (30, 0.1)])
    assert fresh.step(30) == 0.1


def test_piecewise_scheduler_errors():
    with pytest.raises(ValueError, match="strictly increasing"):
        PiecewiseScheduler([(0, 1.0), (5, 0.5), (5, 0.1)])
    with pytest.raises(ValueError, match="non-empty"):
        PiecewiseScheduler([])
    with pytest.raises(ValueError, match="pairs"):
        PiecewiseScheduler([(0, 1.0, 2.0)])


def test_window_and_time_stat():
    stat = WindowStat(3)
    assert stat.mean is None
    for v in (1, 2, 3, 10):
        stat.add(v)
    assert (stat.mean, stat.min, stat.max, stat.count) == (5.0, 2.0, 10.0, 4)
    timer = TimeStat(5)
    with timer:
        sum(range(1000))
    assert timer.count == 1 and timer.mean > 0


def test_csv_logger(tmp_path):
    path = tmp_path / "sub" / "log.csv"
    log = CSVLogger(path)
    log.log_dict({"step": 1, "return": 10.5})
    log.log_dict({"return": 12.0, "step": 2})
    with pytest.raises(ValueError, match="same keys"):
        log.log_dict({"step": 3})
    log.close()
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows == [{"step": "1", "return": "10.5"}, {"step": "2", "return": "12.0"}]
