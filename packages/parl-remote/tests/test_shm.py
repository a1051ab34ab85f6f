"""The same-host shared-memory arenas (``shm.Channel``): views, release, reuse, bounds, fallback."""

from __future__ import annotations

import gc
import os
import pathlib
import stat

import pytest

from parl_remote import shm

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not shm.available(), reason="no writable /dev/shm on this machine"),
]

MIB = 2**20


def _mine() -> set[pathlib.Path]:
    return set(shm.SHM_DIR.glob(f"xparl-{os.getpid()}-a*"))


def test_channel_view_release_and_reuse():
    before = _mine()
    sender, receiver = shm.Channel(), shm.Channel()
    try:
        data = bytes(range(256)) * (2 * MIB // 256)
        manifest, frames = sender.export([data])
        assert frames == []  # the buffer went into the arena, not into a frame
        (arena,) = sender.arenas
        assert stat.S_IMODE(os.stat(arena.path).st_mode) == 0o600
        view = shm.restore(manifest, [], receiver)[0]
        assert view.readonly and bytes(view) == data
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
    sender, receiver = shm.Channel(), shm.Channel()
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
    sender, receiver = shm.Channel(), shm.Channel()
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
