"""The same-host shared-memory arenas (``shm_arena.Channel``): views, release, reuse, bounds, fallback."""

from __future__ import annotations

import gc
import os
import pathlib
import stat

import pytest

from parl_remote.wire import shm, shm_arena

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not shm.available(), reason="no writable /dev/shm on this machine"),
]

MIB = 2**20


def _mine() -> set[pathlib.Path]:
    return set(shm.SHM_DIR.glob(f"xparl-{os.getpid()}-a*"))


def test_channel_view_release_and_reuse():
    before = _mine()
    sender, receiver = shm_arena.Channel(), shm_arena.Channel()
    try:
        data = bytes(range(256)) * (2 * MIB // 256)
        manifest, frames = sender.export([data])
        assert frames == []  # the buffer went into the arena, not into a frame
        (arena,) = sender.arenas
        assert stat.S_IMODE(os.stat(arena.path).st_mode) == 0o600
        view = shm.restore(manifest, [], receiver)[0]
        assert not view.readonly and bytes(view) == data  # writable: the region is the receiver's until released
        # while the receiver holds the view, a second send takes another region
        manifest2, _ = sender.export([b"\1" * (2 * MIB)])
        view2 = shm.restore(manifest2, [], receiver)[0]
        assert bytes(view) == data and bytes(view2[:4]) == b"\1\1\1\1"
        assert len(arena.used) == 2
        del view, view2
        gc.collect()
        assert len(receiver.released) == 2  # both views were freed: two release entries are pending
        release_manifest, frames = receiver.export([])  # rides on the receiver's next (small) message
        assert frames == [] and not receiver.released
        assert shm.restore(release_manifest, [], sender) == []
        assert arena.used == {}  # the regions can be reused
        assert receiver.export([]) is None  # nothing large, nothing to release: no manifest
    finally:
        sender.close()
        receiver.close()
    assert _mine() <= before  # arenas are unlinked when the connection closes


def test_region_outside_the_arena_or_namespace_is_refused():
    sender, receiver = shm_arena.Channel(), shm_arena.Channel()
    try:
        sender.export([b"x" * (2 * MIB)])
        name = sender.arenas[0].raw_name
        capacity = sender.arenas[0].capacity
        beyond = shm._REGION.pack(shm.KIND_ARENA, name, MIB, capacity)
        with pytest.raises(ValueError, match="outside"):
            shm.restore(beyond, [], receiver)
        with pytest.raises(ValueError, match="refusing"):
            shm.restore(shm._REGION.pack(shm.KIND_ARENA, b"../../etc/passwd", 10, 0), [], receiver)
        with pytest.raises(ValueError, match="without shared-memory arenas"):
            shm.restore(shm._REGION.pack(shm.KIND_ARENA, name, 10, 0), [], None)
        with pytest.raises(ValueError, match="malformed"):
            shm.restore(b"\x02short", [], receiver)
    finally:
        sender.close()
        receiver.close()


def test_arena_cap_falls_back_to_one_off_files(monkeypatch):
    monkeypatch.setenv("XPARL_SHM_ARENA_MAX_BYTES", "0")
    before = set(shm.SHM_DIR.glob(f"xparl-{os.getpid()}-*"))
    sender, receiver = shm_arena.Channel(), shm_arena.Channel()
    try:
        data = b"y" * (2 * MIB)
        manifest, _ = sender.export([data])
        assert sender.arenas == []
        view = shm.restore(manifest, [], receiver)[0]  # a one-off file: mapped and unlinked at once
        assert bytes(view) == data
        assert set(shm.SHM_DIR.glob(f"xparl-{os.getpid()}-*")) <= before
    finally:
        sender.close()
        receiver.close()


def test_a_full_dev_shm_sends_large_buffers_inline_and_leaves_nothing(monkeypatch, caplog):
    """No room for an arena nor a one-off file: the buffer travels inline (a frame), with one warning."""
    import errno

    before = set(shm.SHM_DIR.glob(f"xparl-{os.getpid()}-*"))
    real_statvfs = os.statvfs

    def no_fallocate(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shm.os, "posix_fallocate", no_fallocate)
    monkeypatch.setattr(shm._Full, "warned", False)
    sender, receiver = shm_arena.Channel(), shm_arena.Channel()
    try:
        data = bytes(range(256)) * (2 * MIB // 256)
        small = b"s" * 100
        with caplog.at_level("WARNING", logger="parl_remote.wire.shm"):
            # statvfs says there is no room: nothing is written at all
            full = os.statvfs_result((4096, 4096, 10, 0, 0, 0, 0, 0, 0, 255))
            monkeypatch.setattr(shm.os, "statvfs", lambda path: full)
            manifest, frames = sender.export([small, data])
            assert [bytes(f) for f in frames] == [small, data] and sender.arenas == []
            assert [bytes(v) for v in shm.restore(manifest, frames, receiver)] == [small, data]
            # statvfs says there is room, but the write runs out of it: the partial file is removed
            monkeypatch.setattr(shm.os, "statvfs", real_statvfs)
            real_write = os.write

            def write_until_full(fd, chunk):
                if isinstance(chunk, memoryview):  # (ours: pytest's own writes pass bytes)
                    real_write(fd, chunk[: MIB // 2])
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_write(fd, chunk)

            monkeypatch.setattr(shm.os, "write", write_until_full)
            manifest, frames = shm.export([data])  # the module's one-off path too
            assert [bytes(f) for f in frames] == [data]
            assert [bytes(v) for v in shm.restore(manifest, frames, None)] == [data]
        warnings = [r for r in caplog.records if "no room in" in r.getMessage()]
        assert len(warnings) == 1 and "--shm-size" in warnings[0].getMessage()  # once per process
        assert set(shm.SHM_DIR.glob(f"xparl-{os.getpid()}-*")) <= before
    finally:
        sender.close()
        receiver.close()


def test_an_arena_removed_before_the_receiver_mapped_it_is_retired():
    """A /dev/shm clean-up unlinked the sender's new arena: that message cannot be read (OSError, which the
    protocol answers as a TransferError), and the sender moves to a fresh arena for the next ones."""
    sender, receiver = shm_arena.Channel(), shm_arena.Channel()
    try:
        data = b"r" * (2 * MIB)
        manifest, _ = sender.export([data])
        [first] = sender.arenas
        first.path.unlink()
        with pytest.raises(FileNotFoundError):
            shm.restore(manifest, [], receiver)
        manifest, _ = sender.export([data])
        assert first not in sender.arenas and len(sender.arenas) == 1
        assert bytes(shm.restore(manifest, [], receiver)[0]) == data
    finally:
        sender.close()
        receiver.close()


_SMALL_SHM_CODE = """
import logging, os, sys
import numpy as np
import parl_remote as xparl

@xparl.remote_class
class Echo:
    def echo(self, x):
        return x

xparl.connect(cpu_num=1)
actor = Echo()
for mib in (2, 6, 20, 40):  # past the 8 MiB /dev/shm from the second one on
    array = np.arange(mib << 17, dtype=np.float64)
    back = actor.echo(array)
    assert back.shape == array.shape and back[-1] == array[-1], mib
print("echoed", sorted(os.listdir("/dev/shm")), flush=True)
"""


def test_a_docker_sized_dev_shm_costs_speed_not_calls(tmp_path):
    """In a private mount namespace whose /dev/shm holds 8 MiB (Docker's default is 64 MiB), arrays of up
    to 40 MiB still travel, inline, with one warning; no file is left behind. (Before, such calls raised
    ``OSError: No space left on device`` and left partial files.)"""
    pytest.importorskip("numpy")
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(8) (util-linux)")
    mount = "mount -t tmpfs -o size=8m tmpfs /dev/shm"
    for flags in (["-m"], ["-r", "-m"]):  # as root, else in a user namespace
        probe = subprocess.run(["unshare", *flags, "sh", "-c", mount], capture_output=True, text=True)
        if probe.returncode == 0:
            break
    else:
        pytest.skip(f"cannot make a private mount namespace here: {probe.stderr.strip()}")
    script = tmp_path / "small_shm.py"
    script.write_text(_SMALL_SHM_CODE)
    done = subprocess.run(
        ["unshare", *flags, "sh", "-c", f'{mount} && exec "$0" "$1"', sys.executable, str(script)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "XPARL_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "echoed []" in done.stdout, done.stdout + done.stderr
    assert done.stderr.count("no room in /dev/shm") >= 1 and "--shm-size" in done.stderr, done.stderr
    assert "No space left" not in done.stdout
