"""Crash-safe checkpoints: atomic writes, saves killed at random moments, and clear refusals of bad files.

``Agent.save`` (torch and paddle) and ``ReplayMemory.save`` are killed with SIGKILL at random moments of a
save (``checkpoint_kill.py``); every checkpoint left must load whole, from the previous save or the new one.
Bad files (missing, empty, truncated, random bytes, another architecture or format version, objects that
would run code) are refused with a message naming the file, the problem and the fix, and leave the agent or
memory as it was.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from test_core_agent import _learned, batch, make_agent, make_classes

from parl_core.utils import ReplayMemory, atomic, atomic_write, atomic_write_many

HERE = os.path.dirname(os.path.abspath(__file__))


def _agent_module(backend):
    import importlib

    return importlib.import_module(backend.core.Agent.__module__)


def _flat(value, prefix=""):
    """``{path: np.ndarray}`` of every array / tensor / number in a nested state."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}/{key}"))
        return out
    if isinstance(value, (list, tuple)):
        out = {}
        for i, item in enumerate(value):
            out.update(_flat(item, f"{prefix}/{i}"))
        return out
    if hasattr(value, "numpy"):
        array = value.detach().cpu().numpy() if hasattr(value, "detach") and hasattr(value, "cpu") else value.numpy()
        return {prefix: np.array(array, copy=True)}
    return {prefix: np.array(value, copy=True)}


def _files(folder):
    """The names of the files in ``folder`` (folders other fixtures make there are left out)."""
    return sorted(name for name in os.listdir(folder) if os.path.isfile(os.path.join(folder, name)))


def _snapshot(agent):
    return _flat(agent.alg.state_dict())


def _assert_same(before, after):
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(before[key], after[key], err_msg=key)


# -- the atomic-write primitive ----------------------------------------------------------------------
def test_atomic_write_replaces_whole_and_cleans_up(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    with atomic_write(path) as file:
        file.write(b"new")
        assert path.read_bytes() == b"old"  # not visible before the block ends
        assert os.path.dirname(file.name) == str(tmp_path)  # same folder: the rename cannot cross file systems
    assert path.read_bytes() == b"new"
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(path) as file:
            file.write(b"half")
            raise RuntimeError("boom")
    assert path.read_bytes() == b"new"
    assert _files(tmp_path) == ["f.bin"]  # the temporary file of the failed write is gone
    with atomic_write(tmp_path / "t.txt", mode="w") as file:
        file.write("text")
    assert (tmp_path / "t.txt").read_text() == "text"
    with pytest.raises(ValueError, match="'wb' or 'w'"):
        with atomic_write(path, mode="a"):
            pass


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_atomic_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "secret.ckpt"
    path.write_bytes(b"old")
    os.chmod(path, 0o600)
    with atomic_write(path) as file:
        file.write(b"new")
    assert path.read_bytes() == b"new" and (os.stat(path).st_mode & 0o777) == 0o600


def test_stale_temporary_files_of_dead_processes_are_removed_by_the_next_write(tmp_path):
    path = tmp_path / "model.ckpt"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".model.ckpt.{dead_pid}.0123456789abcdef.tmp"
    live = tmp_path / f".model.ckpt.{os.getppid()}.0123456789abcdef.tmp"  # a running process: kept
    other = tmp_path / f".model.ckpt.state.{dead_pid}.0123456789abcdef.tmp"  # another file's: not ours to remove
    for name in (stale, live, other):
        name.write_bytes(b"partial")
    with atomic_write(path) as file:
        file.write(b"x")
    assert not stale.exists() and live.exists() and other.exists()
    assert atomic.remove_stale_temps(tmp_path / "model.ckpt.state") == [str(other)]


def test_atomic_write_many_renames_in_order_and_nothing_when_a_write_fails(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    with atomic_write_many([a, b]) as (fa, fb):
        fa.write(b"1")
        fb.write(b"2")
    assert (a.read_bytes(), b.read_bytes()) == (b"1", b"2")
    with pytest.raises(OSError):
        with atomic_write_many([a, b]) as (fa, fb):
            fa.write(b"3")
            raise OSError("disk full")
    assert (a.read_bytes(), b.read_bytes()) == (b"1", b"2")
    renamed = []
    real_replace = os.replace

    def crash_after_first(src, dst):
        if renamed:
            raise KeyboardInterrupt  # the process dies between the two renames
        renamed.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", crash_after_first)
    with pytest.raises(KeyboardInterrupt):
        with atomic_write_many([a, b]) as (fa, fb):
            fa.write(b"5")
            fb.write(b"6")
    assert (a.read_bytes(), b.read_bytes()) == (b"5", b"2")  # a prefix of the renames, in order
    assert _files(tmp_path) == ["a", "b"]
    with pytest.raises(ValueError, match="same path twice"):
        with atomic_write_many([a, a]):
            pass


# -- kill -9 during saves -------------------------------------------------------------------------------
@pytest.mark.timeout(240)
@pytest.mark.parametrize("kind", ["torch", "paddle", "memory"])
def test_a_save_killed_at_any_moment_leaves_a_whole_checkpoint(kind, tmp_path):
    if kind != "memory":
        pytest.importorskip(kind)
    kills = 110
    result = subprocess.run([sys.executable, os.path.join(HERE, "checkpoint_kill.py"), kind, str(tmp_path),
                             str(kills), "12345"], capture_output=True, text=True, timeout=220)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["kills"] == kills
    assert report["unloadable"] == 0, report
    assert report["torn"] == 0, report
    assert report["other"] == 0 and report["lost"] == 0 and report["main_file_bad"] == 0, report
    assert report["old"] + report["new"] == kills, report
    assert report["old"] > 0 and report["new"] > 0, report  # kills landed before and after commits
    assert report["debris_max"] <= (1 if kind == "memory" else 2), report  # cleaned by each next save
    assert report["final_ok"], report


# -- the commit order of Agent.save ----------------------------------------------------------------------
def _crash_after_renames(monkeypatch, count):
    real_replace = os.replace
    done = []

    def replace(src, dst):
        if len(done) == count:
            raise KeyboardInterrupt  # the process dies here
        done.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)


@pytest.mark.parametrize("had_model_file", [True, False])
def test_a_save_stopped_between_its_two_renames_restores_the_new_state_whole(backend, tmp_path, monkeypatch,
                                                                             had_model_file):
    path = tmp_path / "model.ckpt"
    if had_model_file:
        _learned(backend, steps=2).save(path)
    agent = _learned(backend, steps=5)
    with monkeypatch.context() as patch:
        _crash_after_renames(patch, 1)  # the sidecar (the commit) is renamed, the model file is not
        with pytest.raises(KeyboardInterrupt):
            agent.save(path)
    assert path.exists() == had_model_file
    expected = [agent.learn(*batch(i)) for i in range(5, 7)]
    fresh = make_agent(backend, seed=9)
    fresh.restore(path)
    assert fresh.alg.learn_steps == 5
    assert [fresh.learn(*batch(i)) for i in range(5, 7)] == expected  # weights, target and Adam: the new save
    agent.save(path)  # the next save completes the pair and leaves no temporary file
    assert _files(tmp_path) == ["model.ckpt", "model.ckpt.state"]


def test_a_save_stopped_before_its_commit_restores_the_previous_state_whole(backend, tmp_path, monkeypatch):
    path = tmp_path / "model.ckpt"
    old = _learned(backend, steps=2)
    old.save(path)
    expected = [old.learn(*batch(i)) for i in range(2, 4)]
    with monkeypatch.context() as patch:
        _crash_after_renames(patch, 0)
        with pytest.raises(KeyboardInterrupt):
            _learned(backend, steps=5).save(path)
    fresh = make_agent(backend, seed=9)
    fresh.restore(path)
    assert fresh.alg.learn_steps == 2
    assert [fresh.learn(*batch(i)) for i in range(2, 4)] == expected


def test_checkpoints_of_earlier_versions_still_restore(backend, tmp_path):
    agent = _learned(backend)
    parl = tmp_path / "parl221.ckpt"  # PARL 2.2.1: torch.save / paddle.save of the model's state_dict
    backend.save(agent.alg.model.state_dict(), str(parl))
    fresh = make_agent(backend, seed=3)
    fresh.restore(parl)
    for name, value in agent.alg.model.get_weights().items():
        np.testing.assert_array_equal(fresh.alg.model.get_weights()[name], value)
    # parl-core 3.0: the same pair, a sidecar without replaces_sha256
    module = _agent_module(backend)
    path = tmp_path / "v30.ckpt"
    backend.save(agent.alg.model.state_dict(), str(path))
    import hashlib

    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    backend.save({"format": module.CHECKPOINT_FORMAT, "algorithm": "ToyDQN", "state": agent.alg.state_dict(),
                  "main_sha256": digest}, str(path) + module.STATE_SUFFIX)
    expected = [agent.learn(*batch(i)) for i in range(5, 7)]
    fresh = make_agent(backend, seed=4)
    fresh.restore(path)
    assert fresh.alg.learn_steps == 5
    assert [fresh.learn(*batch(i)) for i in range(5, 7)] == expected


def test_a_partial_file_of_an_earlier_killed_save_is_removed(backend, tmp_path):
    path = tmp_path / "model.ckpt"
    (tmp_path / "model.ckpt.state.partial").write_bytes(b"\x80\x02half")
    make_agent(backend).save(path)
    assert _files(tmp_path) == ["model.ckpt", "model.ckpt.state"]


# -- refusals of Agent.restore -------------------------------------------------------------------------
class _RunsCode:
    """Unpickling this calls os.mkdir(marker): what a crafted checkpoint could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _bad_files(backend, tmp_path, good):
    """name -> (bytes of a bad file, regex of what the message says is wrong)."""
    data = good.read_bytes()
    rng = np.random.default_rng(0)
    evil = tmp_path / "evil.tmpfile"
    backend.save({"fc1.weight": _RunsCode(str(tmp_path / "marker"))}, str(evil))
    return {
        "empty": (b"", r"empty \(0 bytes"),
        "truncated": (data[: len(data) // 2], "truncated or corrupt"),
        "cut_at_end": (data[:-10], "truncated or corrupt"),
        "random": (rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(), "not a torch / paddle checkpoint"),
        "text": (b"hello, this is not a checkpoint\n", "not a torch / paddle checkpoint"),
        "runs_code": (evil.read_bytes(), r"references .*mkdir.*not unpickled"),
    }


def _check_refusal(exc_info, path, what, fix):
    message = str(exc_info.value)
    assert repr(str(path)) in message  # names the file
    assert re.search(what, message), message  # says what is wrong
    assert re.search(fix, message), message  # says what to do
    assert "weights_only" not in message
    assert exc_info.value.__cause__ is None
    assert exc_info.value.__context__ is None or exc_info.value.__suppress_context__


@pytest.mark.parametrize("which", ["model_file", "sidecar"])
def test_bad_files_are_refused_naming_the_file_and_the_agent_is_untouched(backend, tmp_path, which):
    saved = _learned(backend, steps=3)
    path = tmp_path / "model.ckpt"
    saved.save(path)
    sidecar = tmp_path / f"model.ckpt{_agent_module(backend).STATE_SUFFIX}"
    if which == "model_file":
        os.remove(sidecar)  # a PARL-style file alone: restore reads the model file
        target, fix = path, "restore an earlier checkpoint, or save again"
    else:
        target, fix = sidecar, "move it away"
    good = target.read_bytes()
    agent = _learned(backend, seed=5, steps=2)
    before = _snapshot(agent)
    for name, (data, what) in _bad_files(backend, tmp_path, target).items():
        target.write_bytes(data)
        with pytest.raises(ValueError) as exc_info:
            agent.restore(path)
        _check_refusal(exc_info, target, what, fix)
        _assert_same(before, _snapshot(agent))
        assert not (tmp_path / "marker").exists(), name  # no code in the file ran
    target.write_bytes(good)
    agent.restore(path)
    assert agent.alg.learn_steps == (3 if which == "sidecar" else 2)  # a model file alone: weights only
    for name, value in saved.alg.model.get_weights().items():
        np.testing.assert_array_equal(agent.alg.model.get_weights()[name], value)


def test_missing_and_wrong_architecture_and_wrong_version_are_refused(backend, tmp_path):
    module = _agent_module(backend)
    agent = _learned(backend, steps=2)
    before = _snapshot(agent)
    with pytest.raises(FileNotFoundError) as exc_info:
        agent.restore(tmp_path / "missing.ckpt")
    assert repr(str(tmp_path / "missing.ckpt")) in str(exc_info.value) and "agent.save" in str(exc_info.value)

    class Wide(backend.core.Model):  # another architecture: fc1 has 32 units
        def __init__(self):
            super().__init__()
            self.fc1 = backend.Linear(4, 32)
            self.fc2 = backend.Linear(32, 2)

        def forward(self, obs):
            return self.fc2(self.fc1(obs))

    _, ToyDQN = make_classes(backend)
    wide = backend.core.Agent(ToyDQN(Wide()))
    wide.save(tmp_path / "wide.ckpt")  # full state: restore applies model, target, Adam part by part
    with pytest.raises(ValueError) as exc_info:
        agent.restore(tmp_path / "wide.ckpt")
    _check_refusal(exc_info, tmp_path / "wide.ckpt.state", "shape mismatches", "built like the one that saved it")
    _assert_same(before, _snapshot(agent))
    wide.save(tmp_path / "wide_model.ckpt", model=wide.alg.model)  # model file only
    with pytest.raises(ValueError) as exc_info:
        agent.restore(tmp_path / "wide_model.ckpt")
    _check_refusal(exc_info, tmp_path / "wide_model.ckpt", "shape mismatches", "architecture that saved it")
    _assert_same(before, _snapshot(agent))

    # a model whose target matches but whose main model does not: the part already loaded is undone
    state = agent.alg.state_dict()
    state["target_model"] = _learned(backend, seed=8).alg.target_model.state_dict()
    state["model"] = wide.alg.model.state_dict()
    backend.save({"format": module.CHECKPOINT_FORMAT, "algorithm": "ToyDQN", "state": state},
                 str(tmp_path / "mixed.ckpt"))
    with pytest.raises(ValueError, match="mixed.ckpt"):
        agent.restore(tmp_path / "mixed.ckpt")
    _assert_same(before, _snapshot(agent))

    agent.save(tmp_path / "v2.ckpt")
    newer = tmp_path / f"v2.ckpt{module.STATE_SUFFIX}"
    full = backend.load(str(newer)) if backend.name == "torch" else __import__("paddle").load(str(newer))
    full["format"] = "parl-checkpoint-v2"
    backend.save(full, str(newer))
    with pytest.raises(ValueError) as exc_info:
        agent.restore(tmp_path / "v2.ckpt")
    _check_refusal(exc_info, newer, "checkpoint format 'parl-checkpoint-v2'", "parl-core version that wrote it")
    _assert_same(before, _snapshot(agent))
    backend.save([1, 2, 3], str(tmp_path / "list.ckpt"))
    with pytest.raises(ValueError) as exc_info:
        agent.restore(tmp_path / "list.ckpt")
    _check_refusal(exc_info, tmp_path / "list.ckpt", "holds a list, not a model's state_dict", "restore a file")


# -- ReplayMemory -----------------------------------------------------------------------------------
def _memory(seed=0, n=20):
    rpm = ReplayMemory(50, 3, 0, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        rpm.append(rng.normal(size=3), int(rng.integers(2)), float(rng.normal()), rng.normal(size=3), False)
    return rpm


def _memory_state(rpm):
    return [a.copy() for a in (rpm.obs, rpm.action, rpm.reward, rpm.next_obs, rpm.terminal)] + [
        rpm.size(), rpm._curr_pos]


def test_replay_memory_save_is_atomic_and_keeps_the_file_name(tmp_path, monkeypatch):
    rpm = _memory()
    rpm.save(tmp_path / "rpm")  # numpy's rule: .npz appended
    assert _files(tmp_path) == ["rpm.npz"]
    with monkeypatch.context() as patch:
        _crash_after_renames(patch, 0)
        with pytest.raises(KeyboardInterrupt):
            _memory(seed=1, n=30).save(tmp_path / "rpm.npz")
    other = ReplayMemory(50, 3, 0)
    other.load(tmp_path / "rpm")
    assert other.size() == 20
    np.testing.assert_array_equal(other.obs[:20], rpm.obs[:20])
    with np.load(tmp_path / "rpm.npz") as data:  # PARL's keys are still there
        assert {"obs", "action", "reward", "next_obs", "terminal", "other"} <= set(data.files)


def test_replay_memory_refuses_bad_files_naming_the_file_and_keeps_its_contents(tmp_path):
    good = tmp_path / "good.npz"
    _memory(seed=1).save(good)
    data = good.read_bytes()
    rpm = _memory()
    before = _memory_state(rpm)
    np.save(tmp_path / "array.npy", np.zeros(3))
    np.savez(tmp_path / "other.npz", weights=np.zeros(3))
    np.savez(tmp_path / "newer.npz", **{k: v for k, v in np.load(good).items() if k != "format"},
             format=np.asarray("parl-replay-memory-v9"))
    _memory(n=20).save(tmp_path / "shape.npz")
    ReplayMemory(50, 5, 0).save(tmp_path / "wide.npz")
    rng = np.random.default_rng(0)
    cases = {
        "empty.npz": (b"", r"empty \(0 bytes", "load an earlier copy"),
        "truncated.npz": (data[: len(data) // 2], "truncated or corrupt", "load an earlier copy"),
        "cut_at_end.npz": (data[:-7], "truncated or corrupt", "load an earlier copy"),
        "random.npz": (rng.integers(0, 256, 2048, dtype=np.uint8).tobytes(), "not an .npz archive",
                       "load an earlier copy"),
        "array.npy": (None, r"single numpy array \(.npy\)", "load an earlier copy"),
        "other.npz": (None, r"lacks the arrays \['obs'", "load a file ReplayMemory.save wrote"),
        "newer.npz": (None, "format 'parl-replay-memory-v9'", "parl-core version that wrote it"),
        "wide.npz": (None, r"obs \(0, 5\) \(expected \(0, 3\)\)", "create the memory with the dims"),
    }
    for name, (content, what, fix) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(ValueError) as exc_info:
            rpm.load(path)
        message = str(exc_info.value)
        assert str(path) in message and re.search(what, message), message
        assert re.search(fix, message), message
        after = _memory_state(rpm)
        for a, b in zip(before, after, strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(FileNotFoundError, match="missing.npz.*ReplayMemory.save"):
        rpm.load(tmp_path / "missing.npz")
    rpm.load(good)
    assert rpm.size() == 20
