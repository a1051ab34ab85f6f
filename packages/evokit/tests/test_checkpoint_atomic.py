"""Crash-safe model / solver saves and clear refusals of bad model and solver files."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from evokit import ESAgent, ModelFileError, NumpyMLP

HERE = pathlib.Path(__file__).parent


def _code(module_path: pathlib.Path) -> str:
    tree = ast.parse(module_path.read_text())
    tree.body = tree.body[1:]  # without the module docstring
    return ast.dump(tree)


def test_the_atomic_module_is_the_code_of_parl_core_utils_atomic():
    if importlib.util.find_spec("parl_core") is None:
        pytest.skip("parl-core is not installed")
    import evokit._atomic as ours
    import parl_core.utils.atomic as core

    assert _code(pathlib.Path(ours.__file__)) == _code(pathlib.Path(core.__file__)), (
        "evokit/_atomic.py differs from parl_core/utils/atomic.py: copy the code over (keep evokit's docstring)")


@pytest.mark.timeout(200)
def test_a_model_save_killed_at_any_moment_leaves_a_whole_file(tmp_path):
    kills = 110
    result = subprocess.run([sys.executable, str(HERE / "kill_during_save.py"), str(tmp_path), str(kills), "7"],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["kills"] == kills
    assert report["unloadable"] == 0 and report["torn"] == 0, report
    assert report["other"] == 0 and report["lost"] == 0, report
    assert report["old"] > 0 and report["new"] > 0, report  # kills landed before and after the rename
    assert report["debris_max"] <= 1 and report["final_ok"], report


def _agent(make_config, seed=0):
    agent = ESAgent(NumpyMLP([4, 8, 2], seed=seed), config=make_config())
    agent.init_solver()
    return agent


def _refused(call, path, what):
    with pytest.raises(ModelFileError) as exc_info:
        call()
    message = str(exc_info.value)
    assert repr(str(path)) in message, message
    assert re.search(what, message), message
    assert re.search("load an earlier copy|save the model again|same architecture", message), message
    assert "weights_only" not in message and exc_info.value.__cause__ is None


def _bad_bytes(good: bytes) -> dict[str, tuple[bytes, str]]:
    rng = np.random.default_rng(0)
    return {
        "empty": (b"", r"empty \(0 bytes"),
        "truncated": (good[: len(good) // 2], "truncated or corrupt"),
        "cut_at_end": (good[:-9], "truncated or corrupt"),
        "random": (rng.integers(0, 256, 1024, dtype=np.uint8).tobytes(), "is not a"),
    }


def test_bad_numpy_model_and_solver_files_are_refused_and_the_agent_is_unchanged(tmp_path, make_config):
    saved = _agent(make_config, seed=1)
    model_path = pathlib.Path(saved.save_inference_model(tmp_path / "m"))
    solver_path = pathlib.Path(saved.save_solver(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path / "m")) == ["model.npz", "solver.npz"]
    agent = _agent(make_config, seed=2)
    before = agent._backend.get_flat().copy()
    for target, call in ((model_path, lambda: agent.load_inference_model(tmp_path / "m")),
                         (solver_path, lambda: agent.load_solver(tmp_path / "m"))):
        good = target.read_bytes()
        for data, what in _bad_bytes(good).values():
            target.write_bytes(data)
            _refused(call, target, what)
            np.testing.assert_array_equal(agent._backend.get_flat(), before)
        target.write_bytes(good)
    np.savez(model_path, w0=np.zeros((4, 3), np.float32), b0=np.zeros(3, np.float32),
             w1=np.zeros((3, 2), np.float32), b1=np.zeros(2, np.float32))
    _refused(lambda: agent.load_inference_model(tmp_path / "m"), model_path, r"does not fit .*shape mismatches")
    np.testing.assert_array_equal(agent._backend.get_flat(), before)
    np.savez(solver_path, weights=np.zeros(3))
    with pytest.raises(ModelFileError, match=r"solver.npz.*lacks \['meta/solver_type'"):
        agent.load_solver(tmp_path / "m")
    with pytest.raises(ModelFileError, match=r"empty \(0 bytes"):  # an agent without a model: rebuilt from file
        model_path.write_bytes(b"")
        ESAgent(config=make_config()).load_inference_model(model_path)


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_bad_torch_and_paddle_model_files_are_refused_unrun(tmp_path, make_config, framework):
    fw = pytest.importorskip(framework)
    nn = fw.nn

    def make(width):
        return nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Linear(width, 2))

    saved = ESAgent(make(8), config=make_config())
    path = pathlib.Path(saved.save_inference_model(tmp_path / "m"))
    agent = ESAgent(make(8), config=make_config())
    before = agent._backend.get_flat().copy()
    good = path.read_bytes()
    marker = tmp_path / "marker"

    class RunsCode:
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    fw.save({"0.weight": RunsCode()}, str(tmp_path / "evil"))
    cases = _bad_bytes(good)
    cases["runs_code"] = ((tmp_path / "evil").read_bytes(), r"references .*mkdir.*not unpickled")
    for data, what in cases.values():
        path.write_bytes(data)
        _refused(lambda: agent.load_inference_model(tmp_path / "m"), path, what)
        np.testing.assert_array_equal(agent._backend.get_flat(), before)
        assert not marker.exists()
    ESAgent(make(16), config=make_config()).save_inference_model(tmp_path / "m")  # another architecture
    _refused(lambda: agent.load_inference_model(tmp_path / "m"), path, r"does not fit .*shape mismatches")
    np.testing.assert_array_equal(agent._backend.get_flat(), before)
    path.write_bytes(good)
    agent.load_inference_model(tmp_path / "m")
    np.testing.assert_array_equal(agent._backend.get_flat(), saved._backend.get_flat())
