"""The D4RL-format trajectories written for PARL's DecisionTransformer example (tests/parl2/make_d4rl_trajectories.py):
D4RL's keys, dtypes and shapes, and its terminal rule (a time-limit end is not a terminal)."""

import importlib.util
import pathlib
import pickle

import numpy as np
import pytest

_PATH = pathlib.Path(__file__).resolve().parent / "parl2" / "make_d4rl_trajectories.py"
_spec = importlib.util.spec_from_file_location("make_d4rl_trajectories", _PATH)
make_d4rl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_d4rl)


def _episode(length, obs_dim=3, act_dim=2, start=0.0):
    obs = start + np.arange(length * obs_dim, dtype=np.float32).reshape(length, obs_dim)
    return {"obs": obs, "act": np.full((length, act_dim), 0.5, np.float32), "rew": np.ones(length, np.float32)}


def test_trajectories_have_d4rls_keys_shapes_and_terminals(tmp_path):
    fell, timed_out = _episode(4), _episode(5, start=100.0)
    paths = make_d4rl.to_d4rl([fell, timed_out], max_episode_steps=5)
    assert [sorted(p) for p in paths] == [["actions", "next_observations", "observations", "rewards", "terminals"]] * 2
    first = paths[0]
    assert first["observations"].shape == (4, 3) and first["actions"].shape == (4, 2) and first["rewards"].shape == (4,)
    assert first["observations"].dtype == np.float32 and first["terminals"].dtype == bool
    np.testing.assert_array_equal(first["next_observations"][:-1], fell["obs"][1:])
    assert first["terminals"].tolist() == [False, False, False, True]  # ended before the limit: terminated
    assert not paths[1]["terminals"].any()  # ran to the 5-step limit: truncated, not terminal
    # read back as PARL's DataLoader reads it
    with open(tmp_path / "hopper-medium-v2.pkl", "wb") as f:
        pickle.dump(paths, f)
    with open(tmp_path / "hopper-medium-v2.pkl", "rb") as f:
        loaded = pickle.load(f)
    assert [p["rewards"].sum() for p in loaded] == [4.0, 5.0]
    assert loaded[0]["observations"].shape[1] == 3 and loaded[0]["actions"].shape[1] == 2


def test_ragged_episode_is_refused():
    bad = _episode(3)
    bad["act"] = bad["act"][:2]
    with pytest.raises(ValueError, match="episode 0"):
        make_d4rl.to_d4rl([bad], max_episode_steps=10)
