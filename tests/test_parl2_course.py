"""PARL's course (PARL 2.2.1 ``examples/tutorials/parl2_dygraph``, paddle) runs here with ``PARL_BACKEND=paddle``.

The lessons' files are vendored in ``tests/parl2/course`` (Apache-2.0; ``NOTICE.md`` lists the only changed
lines: version asserts, the quadrotor env that no longer runs, two NumPy 2 lines). ``import gym`` is served by the
test-only ``tests/parl2/shims/gym``. Each lesson runs in one subprocess on a tiny budget through
``tests/parl2/run_course.py``, which replaces loop counts and warm-up sizes from outside the files (the full runs
and their rewards are in ``packages/parl/README.md``).
"""

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
COURSE = ROOT / "tests" / "parl2" / "course"
SHIMS = ROOT / "tests" / "parl2" / "shims"

pytest.importorskip("paddle", reason="the course is paddle code; the integration nox session installs paddlepaddle")
pytest.importorskip("ale_py", reason="the Pong homework; the integration nox session installs ale-py")
pytest.importorskip("Box2D", reason="LunarLanderContinuous (the quadrotor's replacement); nox installs box2d")

# PARL 2.2.1's files (commit 3bb5fe36), sha256 prefixes: the vendored files minus changes.patch give these
PARL_FILES = {
    "README.md": "b781b66dd31eca46",
    "lesson3/dqn/agent.py": "bdc50e91bf641b27",
    "lesson3/dqn/algorithm.py": "ad2d3d58e8c4529b",
    "lesson3/dqn/model.py": "6e11c641c563ff8b",
    "lesson3/dqn/replay_memory.py": "a08db11d0f24990b",
    "lesson3/dqn/train.py": "eb13905ae8b8875c",
    "lesson3/homework/dqn_mountaincar/agent.py": "bdc50e91bf641b27",
    "lesson3/homework/dqn_mountaincar/model.py": "6e11c641c563ff8b",
    "lesson3/homework/dqn_mountaincar/replay_memory.py": "a08db11d0f24990b",
    "lesson3/homework/dqn_mountaincar/train.py": "30a7e846977e9592",
    "lesson4/homework/policy_gradient_pong/agent.py": "f8bd41a9004bbf1e",
    "lesson4/homework/policy_gradient_pong/model.py": "79f81d2614f14220",
    "lesson4/homework/policy_gradient_pong/train.py": "20c5b3abeaea143b",
    "lesson4/policy_gradient/agent.py": "f8bd41a9004bbf1e",
    "lesson4/policy_gradient/algorithm.py": "6987ff4a0a0e38ab",
    "lesson4/policy_gradient/model.py": "955cacdae1f2655c",
    "lesson4/policy_gradient/train.py": "ca09ab85e47dd4df",
    "lesson5/ddpg/agent.py": "0a49090459112f13",
    "lesson5/ddpg/algorithm.py": "b66ca0f50ec47537",
    "lesson5/ddpg/env.py": "2b40e34abb315361",
    "lesson5/ddpg/model.py": "7ffb7846a17810b4",
    "lesson5/ddpg/replay_memory.py": "a08db11d0f24990b",
    "lesson5/ddpg/train.py": "802b31cfe63cdb7d",
    "lesson5/homework/ddpg_quadrotor/quadrotor_agent.py": "56109af91b868d05",
    "lesson5/homework/ddpg_quadrotor/quadrotor_model.py": "4398130b4c99bbf8",
    "lesson5/homework/ddpg_quadrotor/train.py": "4bdea6ccf8a2f027",
    "requirements.txt": "5334f8200f810bd3",
}

# lesson folder -> how run_course.py shrinks it (see its docstring), and the log line that shows it evaluated
LESSONS = {
    "lesson3/dqn": ({"set": {"MEMORY_WARMUP_SIZE": 50, "BATCH_SIZE": 16}, "range": {"50": 3, "5": 1},
                     "stop": "Test reward"}, r"episode:3 .*Test reward:(-?\d+(?:\.\d+)?)"),
    "lesson3/homework/dqn_mountaincar": ({"set": {"MEMORY_WARMUP_SIZE": 50, "BATCH_SIZE": 16},
                                          "range": {"50": 2, "5": 1}, "env": {"max_episode_steps": 60},
                                          "stop": "Test reward"}, r"episode:2 .*Test reward:(-?\d+(?:\.\d+)?)"),
    "lesson4/policy_gradient": ({"range": {"1000": 20, "5": 1}}, r"Episode 10, Reward Sum (-?\d+(?:\.\d+)?)"),
    "lesson4/homework/policy_gradient_pong": ({"range": {"3000": 1, "5": 1}, "env": {"max_episode_steps": 150}},
                                              r"Episode 0, Reward Sum (-?\d+(?:\.\d+)?)"),
    "lesson5/ddpg": ({"set": {"MEMORY_WARMUP_SIZE": 60, "TRAIN_EPISODE": 3, "BATCH_SIZE": 16},
                      "range": {"100": 3, "5": 1}}, r"episode:3 +Test reward:(-?\d+(?:\.\d+)?)"),
    "lesson5/homework/ddpg_quadrotor": ({"set": {"WARMUP_STEPS": 50, "BATCH_SIZE": 16, "EVAL_EPISODES": 1},
                                         "args": {"train_total_steps": 120, "test_every_steps": 60},
                                         "env": {"max_episode_steps": 40}},
                                        r"Evaluation over: 1 episodes, Reward: (-?\d+(?:\.\d+)?)"),
}


def test_old_gym_shim_serves_what_the_lessons_use(old_gym):
    """What stopped the lessons at the shim: gym's int ``Discrete.n`` (lesson 3's ``assert isinstance(act_dim,
    int)``), ``gym.logger`` and ``gym.utils.seeding`` (lesson 5's env), gym 0.18's ``Box.contains``."""
    import numpy as np

    env = old_gym.make("CartPole-v0")
    assert type(env.action_space.n) is int and env.action_space.n == 2
    assert type(env.unwrapped.action_space.n) is not int  # gymnasium's own space is left as it is
    env.seed(3)
    assert env.action_space.contains(env.action_space.sample())
    from gym import logger, spaces
    from gym.utils import seeding

    assert callable(logger.warn)
    rng, seed = seeding.np_random(5)
    assert isinstance(rng, np.random.RandomState) and seed == 5
    assert seeding.np_random(5)[0].uniform(size=3).tolist() == rng.uniform(size=3).tolist()
    with pytest.raises(old_gym.error.Error, match="non-negative integer"):
        seeding.np_random(-1)
    box = spaces.Box(low=-1.0, high=1.0, shape=(1,))
    assert box.dtype == np.float32
    assert box.contains(np.array([0.5], dtype=np.float64))  # gym 0.18: any dtype; gymnasium says False
    assert not box.contains(np.array([1.5])) and not box.contains(np.array([0.5, 0.5]))


def test_vendored_files_are_parls_but_for_the_listed_lines(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git applies changes.patch in reverse")
    copy = tmp_path / "course"
    shutil.copytree(COURSE, copy)
    subprocess.run(["git", "apply", "-R", "-p1", "changes.patch"], cwd=copy, check=True)
    got = {
        str(p.relative_to(copy)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(copy.rglob("*"))
        if p.is_file() and p.name not in ("LICENSE", "NOTICE.md", "changes.patch")
    }
    assert got == PARL_FILES
    changed = [line for line in (COURSE / "changes.patch").read_text().splitlines() if line.startswith("+++ ")]
    assert len(changed) == 7  # the six train.py and lesson5/ddpg/env.py (NOTICE.md's table)


def test_every_lesson_runs_unchanged_on_paddle(tmp_path):
    copy = tmp_path / "course"
    shutil.copytree(COURSE, copy)
    specs = [{"dir": str(copy / lesson), **spec} for lesson, (spec, _) in LESSONS.items()]
    env = {**os.environ, "PARL_BACKEND": "paddle", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join([str(SHIMS), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "parl2" / "run_course.py"), json.dumps(specs)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    for lesson, (_, evaluated) in LESSONS.items():
        assert f"COURSE-LESSON-END {copy / lesson} " in out.stdout, (lesson, log[-4000:])
        match = re.search(evaluated, log)
        assert match is not None, (lesson, log[-4000:])
        float(match.group(1))
    # the lessons that reach their end save what they trained
    assert (copy / "lesson4/policy_gradient/model.ckpt").exists()
    assert (copy / "lesson4/homework/policy_gradient_pong/model.ckpt").exists()
    # the quadrotor homework's tensorboard.add_scalar calls wrote events
    assert list((copy / "lesson5/homework/ddpg_quadrotor").rglob("events.out.tfevents*"))
