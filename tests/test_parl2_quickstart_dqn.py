"""PARL 2.2.1's QuickStart and DQN examples (``examples/QuickStart``, ``examples/DQN`` on paddle,
``benchmark/torch/QuickStart`` on torch) on this project.

The first tests reproduce, in code written here in PARL's style, what those examples rely on and what stopped
them (``from parl.env import CompatWrapper, is_gym_version_ge`` failed at import; ``assert isinstance(act_dim,
int)`` failed on gymnasium's ``np.int64`` action count). The last test runs PARL's own files unchanged from a
PARL checkout named by ``PARL_SOURCE`` (``git clone https://github.com/PaddlePaddle/PARL``, tag or commit of
2.2.1), with ``import gym`` served by ``tests/parl2/shims``; it is skipped when ``PARL_SOURCE`` is not set (PARL's
code is not copied into this repository).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import gymnasium
import numpy as np
import pytest

import parl
from parl.env import V_GYM_CHANGED, V_NPRANDOM_CHANGED, CompatWrapper, is_gym_version_ge
from parl.utils import ReplayMemory

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_gym_version_constants_are_parls():
    assert (V_GYM_CHANGED, V_NPRANDOM_CHANGED) == ("0.26.0", "0.22.0")
    assert parl.env.compat_wrappers.is_gym_version_ge is is_gym_version_ge


def test_is_gym_version_ge_asks_the_gym_in_use(old_gym, monkeypatch):
    # the old-API gym (0.21): PARL's examples take their old-gym branches
    assert old_gym.__version__ == "0.21.0"
    assert not is_gym_version_ge(V_GYM_CHANGED) and not is_gym_version_ge(V_NPRANDOM_CHANGED)
    assert is_gym_version_ge("0.21.0") and is_gym_version_ge("0.21") and is_gym_version_ge("0.20.9")
    monkeypatch.setattr(old_gym, "__version__", "0.26.2")
    assert is_gym_version_ge(V_GYM_CHANGED) and is_gym_version_ge("0.26") and not is_gym_version_ge("0.27.0")
    # no gym at all: gymnasium, whose every version speaks the new API
    monkeypatch.setitem(sys.modules, "gym", None)
    assert is_gym_version_ge(V_GYM_CHANGED) and not is_gym_version_ge("99.0")


@pytest.mark.parametrize("source", ["old_gym", "gymnasium"])
def test_dqn_example_setup_gets_an_int_action_count(source, request):
    """examples/DQN/train.py: ``act_dim = env.action_space.n`` handed to an agent that asserts it is an int."""
    gym = request.getfixturevalue("old_gym") if source == "old_gym" else gymnasium
    env = CompatWrapper(gym.make("CartPole-v0" if source == "old_gym" else "CartPole-v1"))
    obs_dim = env.observation_space.shape[0]
    act_dim = env.action_space.n
    assert type(act_dim) is int and act_dim == 2
    assert type(env.unwrapped.action_space.n) is not int  # gymnasium's own space is left as it is
    rpm = ReplayMemory(200, obs_dim, 0)  # action_shape 0: discrete actions, as PARL's example sets it
    env.seed(1)
    obs = env.reset()
    for _ in range(5):
        action = env.action_space.sample()
        assert env.action_space.contains(action)
        next_obs, reward, done, _ = env.step(action)
        rpm.append(obs, action, reward, next_obs, done)
        obs = env.reset() if done else next_obs
    batch_obs, batch_action, *_ = rpm.sample_batch(3)
    assert batch_obs.shape == (3, obs_dim) and batch_action.shape == (3,)
    env.seed(7)
    first = [env.action_space.sample() for _ in range(6)]
    env.seed(7)
    assert [env.action_space.sample() for _ in range(6)] == first  # seed() seeds the space the wrapper shows


# PARL 2.2.1's files run unchanged: (folder in PARL, backend, flags, the line each evaluation prints)
PARL_RUNS = {
    "paddle-quickstart": ("examples/QuickStart", "paddle", ["--max_episodes", "100"], r"Test reward: ([-\d.]+)"),
    "paddle-dqn": ("examples/DQN", "paddle", ["--max_episode", "50"], r"Test reward:([-\d.]+)"),
    "torch-quickstart": ("benchmark/torch/QuickStart", "torch", [], r"Test reward: ([-\d.]+)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PARL_RUNS))
def test_parl_221_example_runs_unchanged(name, tmp_path):
    source = os.environ.get("PARL_SOURCE")
    if not source:
        pytest.skip("set PARL_SOURCE to a checkout of PARL 2.2.1 to run its own examples")
    folder, backend, flags, printed = PARL_RUNS[name]
    if backend == "paddle":
        pytest.importorskip("paddle")
    work = tmp_path / name
    shutil.copytree(pathlib.Path(source) / folder, work)
    env = {
        **os.environ,
        "PARL_BACKEND": backend,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "parl2" / "shims"), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, "train.py", *flags], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    returns = [float(r) for r in re.findall(printed, out.stdout + out.stderr)]
    assert returns and all(np.isfinite(returns)) and min(returns) >= 8.0  # a CartPole episode lasts >= 8 steps
    assert (work / "model.ckpt").exists()
