"""The shared-memory arenas of one same-host connection (``Channel``): a client <-> job connection on one host
keeps, on each side, reusable arena files (``/dev/shm/xparl-<pid>-a<random>``, mode 0600) that are allocated
and pre-faulted once. Sending a large buffer is then one memcpy into already-mapped pages (a fresh file costs
page allocation and zeroing: ~50 ms per 100 MiB against ~10 ms), and the receiver maps the peer's arena once
and hands out zero-copy views of its regions (writable: a region is the receiver's until it releases it). A
region is reused only after the receiver says it no longer uses it: when the receiver's view is garbage-
collected (a ``weakref.finalize`` on the view's owner), a *release* entry rides along in the manifest of the
receiver's next message on that connection. Arenas are bounded per side by ``SHM_ARENA_MAX_BYTES`` (beyond it
the one-off files of ``shm.py`` are used) and unlinked when the connection closes; arrays still alive keep
their pages until they are freed. An arena whose file someone else removed (a ``/dev/shm`` clean-up) is
retired: a receiver that has not mapped it yet never could.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import mmap
import os
import secrets
import weakref

from parl_remote import config
from parl_remote.wire.shm import (
    _ENTRY,
    _PREFIX,
    _REGION,
    KIND_ARENA,
    KIND_FRAME,
    KIND_RELEASE,
    SHM_DIR,
    _one_off_or_inline,
    min_bytes,
)

_PAGE = mmap.PAGESIZE
_ARENA_MIN_BYTES = 16 << 20
_MAX_PEER_ARENAS = 64
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)

logger = logging.getLogger(__name__)


def _round_up(nbytes: int) -> int:
    return max(_PAGE, -(-nbytes // _PAGE) * _PAGE)


class _Arena:
    """One arena file of this side, mapped read-write and pre-faulted; regions are handed out first-fit.

    Its descriptor stays open so that ``removed`` can see the file unlinked by someone else.
    """

    def __init__(self, capacity: int) -> None:
        self.name = f"{_PREFIX}{os.getpid()}-a{secrets.token_hex(8)}"
        self.raw_name = self.name.encode()
        self.path = SHM_DIR / self.name
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.posix_fallocate(fd, 0, capacity)  # allocate the pages now, not on every send
            self.map = mmap.mmap(fd, capacity, flags=mmap.MAP_SHARED | _POPULATE)
        except BaseException:
            os.close(fd)
            os.unlink(self.path)
            raise
        self.fd = fd
        self.capacity = capacity
        self.used: dict[int, int] = {}  # offset -> reserved bytes

    def alloc(self, nbytes: int) -> int | None:
        need = _round_up(nbytes)
        start = 0
        for offset in sorted(self.used):
            if offset - start >= need:
                break
            start = offset + self.used[offset]
        else:
            if start + need > self.capacity:
                return None
        self.used[start] = need
        return start

    def removed(self) -> bool:
        """True when the file was unlinked by someone else (a /dev/shm clean-up): a receiver that has not
        mapped it yet never can."""
        return os.fstat(self.fd).st_nlink == 0

    def close(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.map.close()


class Channel:
    """The shared-memory arenas of one same-host connection (one per side; see the module docstring).

    Used by one thread at a time (the thread that owns the connection's socket); the finalizers of
    received views may run in any thread and only append to a deque.
    """

    def __init__(self) -> None:
        self.arenas: list[_Arena] = []
        self.peer_maps: dict[str, mmap.mmap] = {}
        self.released: collections.deque = collections.deque()  # (raw name, offset) of the peer's regions
        self.threshold = min_bytes()
        self.max_bytes = int(config.get("SHM_ARENA_MAX_BYTES"))
        self.closed = False

    def export(self, buffers: list) -> tuple[bytes, list] | None:
        """Like the module's ``export``, through the arenas, plus this side's pending release entries.

        Returns:
            ``(manifest, remaining frames)``, or None when there is no large buffer and nothing to release.
        """
        released = self.released
        if not released and not any(memoryview(b).nbytes >= self.threshold for b in buffers):
            return None
        entries = []
        while released:
            raw_name, offset = released.popleft()
            entries.append(_REGION.pack(KIND_RELEASE, raw_name, 0, offset))
        frames = []
        for buf in buffers:
            view = memoryview(buf).cast("B")
            nbytes = view.nbytes
            if nbytes < self.threshold:
                entries.append(_ENTRY.pack(KIND_FRAME, b"", nbytes))
                frames.append(buf)
                continue
            place = None if self.closed else self._alloc(nbytes)
            if place is None:
                _one_off_or_inline(buf, view, entries, frames)
                continue
            arena, offset = place
            arena.map[offset : offset + nbytes] = view
            entries.append(_REGION.pack(KIND_ARENA, arena.raw_name, nbytes, offset))
        return b"".join(entries), frames

    def _alloc(self, nbytes: int) -> tuple[_Arena, int] | None:
        for arena in self.arenas:
            if arena.removed():  # a region there might never be readable: use fresh arenas from now on
                self._retire(arena)
                return self._alloc(nbytes)
            offset = arena.alloc(nbytes)
            if offset is not None:
                return arena, offset
        total = sum(a.capacity for a in self.arenas)
        capacity = max(_ARENA_MIN_BYTES, _round_up(nbytes), total)  # geometric growth: few files
        if total + capacity > self.max_bytes:
            capacity = _round_up(nbytes)
            if total + capacity > self.max_bytes:
                return None
        try:
            arena = _Arena(capacity)
        except OSError:  # /dev/shm full: one-off files (which may fail loudly themselves)
            return None
        self.arenas.append(arena)
        return arena, arena.alloc(nbytes)

    def _retire(self, arena: _Arena) -> None:
        logger.warning("shared-memory arena %s was removed by another process; using a new one", arena.name)
        self.arenas.remove(arena)
        try:
            arena.close()
        except (OSError, BufferError):
            pass

    def free(self, name: str, offset: int) -> None:
        """The peer released a region of one of this side's arenas."""
        for arena in self.arenas:
            if arena.name == name:
                arena.used.pop(offset, None)
                return

    def view(self, name: str, offset: int, size: int) -> memoryview:
        """A writable view of a region of the peer's arena; its release is reported when it is freed.

        Raises:
            ValueError: the region lies outside the arena, or too many arenas.
            OSError: the arena file is gone.
        """
        mapped = self.peer_maps.get(name)
        if mapped is None:
            if len(self.peer_maps) >= _MAX_PEER_ARENAS:
                raise ValueError("the peer uses too many shared-memory arenas")
            fd = os.open(SHM_DIR / name, os.O_RDWR)
            try:
                length = os.fstat(fd).st_size
                if not length:
                    raise ValueError(f"empty shared-memory arena {name!r}")
                mapped = mmap.mmap(fd, length, flags=mmap.MAP_SHARED | _POPULATE)
            finally:
                os.close(fd)
            self.peer_maps[name] = mapped
        if not size or offset + size > len(mapped):
            raise ValueError(f"shared-memory region {offset}+{size} outside arena {name!r}")
        region = (ctypes.c_ubyte * size).from_buffer(mapped, offset)
        weakref.finalize(region, self.released.append, (name.encode(), offset))
        # writable: until its release the region is this receiver's alone (the sender reuses it only after the
        # release entry), so arrays over it can be updated in place, as PARL code does, at no copy
        return memoryview(region).cast("B")

    def close(self) -> None:
        """Unlinks this side's arenas and drops the peer's mappings (views still alive keep their pages)."""
        self.closed = True
        for arena in self.arenas:
            try:
                arena.close()
            except (OSError, BufferError):
                pass
        self.arenas.clear()
        for mapped in self.peer_maps.values():
            try:
                mapped.close()
            except BufferError:  # arrays still use it: unmapped when they are freed
                pass
        self.peer_maps.clear()
        self.released.clear()
