"""PARL 2.2.1's QuickStart and DQN examples (``examples/QuickStart``, ``examples/DQN`` on paddle,
``benchmark/torch/QuickStart`` on torch) on this project.

The first tests reproduce, in code written here in PARL's style, what those examples rely on and what stopped
them (``from parl.env import CompatWrapper, is_gym_version_ge`` failed at import; ``assert isinstance(act_dim,
int)`` failed on gymnasium's ``np.int64`` action count). The last test runs PARL's own files, vendored unchanged in
``tests/parl2/examples`` (``NOTICE.md``), with ``import gym`` served by ``tests/parl2/shims``: the paddle ones with
their own flags for a small budget, the torch QuickStart (no flags) with its episode loop shortened from outside
(``tests/parl2/run_course.py``).
"""

import json
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


# PARL 2.2.1's files run unchanged: (folder in tests/parl2/examples, backend, flags or a run_course.py spec, the line
# each evaluation prints)
PARL_RUNS = {
    "paddle-quickstart": ("QuickStart", "paddle", ["--max_episodes", "100"], r"Test reward: ([-\d.]+)"),
    "paddle-dqn": ("DQN", "paddle", ["--max_episode", "50"], r"Test reward:([-\d.]+)"),
    "torch-quickstart": ("torch_QuickStart", "torch", {"range": {"1000": 101}}, r"Test reward: ([-\d.]+)"),
}
VENDORED = ROOT / "tests" / "parl2" / "examples"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PARL_RUNS))
def test_parl_221_example_runs_unchanged(name, tmp_path):
    folder, backend, flags, printed = PARL_RUNS[name]
    pytest.importorskip(backend)  # the integration session installs both frameworks
    work = tmp_path / name
    shutil.copytree(VENDORED / folder, work)
    env = {
        **os.environ,
        "PARL_BACKEND": backend,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "parl2" / "shims"), os.environ.get("PYTHONPATH", "")]),
    }
    if isinstance(flags, dict):  # no flags of its own: its loop is shortened from outside, the file unchanged
        runner = str(ROOT / "tests" / "parl2" / "run_course.py")
        cmd = [sys.executable, runner, json.dumps([{"dir": str(work), **flags}])]
    else:
        cmd = [sys.executable, "train.py", *flags]
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    returns = [float(r) for r in re.findall(printed, out.stdout + out.stderr)]
    assert returns and all(np.isfinite(returns)) and min(returns) >= 8.0  # a CartPole episode lasts >= 8 steps
    assert (work / "model.ckpt").exists() or name == "torch-quickstart"


def test_vendored_files_are_parls():
    """The vendored files are PARL 2.2.1's, byte for byte (sha256 of PARL's commit 3bb5fe36's blobs)."""
    import hashlib

    digests = {p.relative_to(VENDORED).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
               for p in sorted(VENDORED.glob("*/*.py"))}  # fmt: skip
    assert digests == PARL_DIGESTS, digests


PARL_DIGESTS = {
    "DDPG/mujoco_agent.py": "1c571e329c306194",
    "DDPG/mujoco_model.py": "25f3a3382eaf06db",
    "DDPG/train.py": "c06e5e2039b33f52",
    "DQN/cartpole_agent.py": "8095addcbe2ea926",
    "DQN/cartpole_model.py": "c2aaaec78f6caad3",
    "DQN/train.py": "f21c427a0298298c",
    "QMIX/env_wrapper.py": "5d3f7f3a5d5719df",
    "QMIX/qmix_agent.py": "61f3add984b679f3",
    "QMIX/qmix_config.py": "207b48474c72c226",
    "QMIX/qmixer_model.py": "6951f874b1a027ca",
    "QMIX/replay_buffer.py": "614ea2efb235ebaf",
    "QMIX/rnn_model.py": "82f399c2fba90674",
    "QMIX/train.py": "c5933003e3277ba7",
    "QMIX/utils.py": "a6348bdb31bb4e18",
    "QuickStart/cartpole_agent.py": "b5a758ceab531323",
    "QuickStart/cartpole_model.py": "f5bb3b9c2d4d612e",
    "QuickStart/train.py": "946f6b04381d63ad",
    "torch_QuickStart/cartpole_agent.py": "eb15ac16ddb6fe56",
    "torch_QuickStart/cartpole_model.py": "b6b405de5415a8aa",
    "torch_QuickStart/train.py": "f9ee08632258d72f",
}
