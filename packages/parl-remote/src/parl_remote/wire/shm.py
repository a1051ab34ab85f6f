"""Same-host fast path for large buffers: files in ``/dev/shm`` instead of TCP frames.

When client and job run on the same machine (same hostname and boot id), every out-of-band buffer of
at least ``SHM_MIN_BYTES`` (a large numpy array) is written once into a fresh file
``/dev/shm/xparl-<sender pid>-<random>`` (mode 0600) and the message carries only its name and size
in a *manifest* frame. The receiver maps the file read-only and unlinks it at once: the array it
unpickles uses the mapped pages directly (zero copy on the receiving side, read-only like the TCP
path), and the memory is freed when the array is.

Security: the manifest is covered by the message's HMAC signature like every frame; the file's bytes
are not hashed (hashing 100 MiB costs ~60 ms, the whole budget) but are protected the way the token
file is, by the operating system: the file belongs to the user and is readable and writable by that
user only. Files whose sender died before they were received are removed by the worker's sweep.

Arenas (``Channel``): a client <-> job connection on one host keeps, on each side, reusable arena
files (``/dev/shm/xparl-<pid>-a<random>``, mode 0600) that are allocated and pre-faulted once. Sending a
large buffer is then one memcpy into already-mapped pages (a fresh file costs page allocation and
zeroing: ~50 ms per 100 MiB against ~10 ms), and the receiver maps the peer's arena once and hands out
read-only zero-copy views of its regions. A region is reused only after the receiver says it no longer
uses it: when the receiver's view is garbage-collected (a ``weakref.finalize`` on the view's owner),
a *release* entry rides along in the manifest of the receiver's next message on that connection.
Arenas are bounded per side by ``SHM_ARENA_MAX_BYTES`` (beyond it the one-off files above are used) and
unlinked when the connection closes; arrays still alive keep their pages until they are freed. An arena
whose file someone else removed (a ``/dev/shm`` clean-up) is retired: a receiver that has not mapped it
yet never could.

A full ``/dev/shm`` (Docker gives containers 64 MiB unless run with ``--shm-size``) costs speed, never a
call: a buffer that fits neither an arena nor a one-off file travels inline in the message, like
between hosts, and the process logs one warning saying how to make room.
"""

from __future__ import annotations

import collections
import ctypes
import errno
import functools
import logging
import mmap
import os
import pathlib
import secrets
import socket
import struct
import weakref

from parl_remote import config

SHM_DIR = pathlib.Path("/dev/shm")
_PREFIX = "xparl-"
_ENTRY = struct.Struct("!B40sQ")  # kind (0: the next frame, 1: a shm file), file name, size
KIND_FRAME = 0
KIND_SHM = 1
_REGION = struct.Struct("!B40sQQ")  # kind, arena file name, size, offset
KIND_ARENA = 2  # a region of the sender's arena (``Channel``)
KIND_RELEASE = 3  # the sender no longer uses this region of the receiver's arena (size 0)
_PAGE = mmap.PAGESIZE
_ARENA_MIN_BYTES = 16 << 20
_MAX_PEER_ARENAS = 64
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)

logger = logging.getLogger(__name__)


class _Full:
    """Whether this process has warned that ``/dev/shm`` is full (once per process)."""

    warned = False


@functools.lru_cache(maxsize=1)
def host_id() -> str:
    """Identifies this machine and boot: processes with equal ids can share ``/dev/shm`` files."""
    try:
        boot = pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""  # unknown: never use the fast path
    return f"{socket.gethostname()}/{boot}"


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """True when ``/dev/shm`` exists and is writable (Linux)."""
    return SHM_DIR.is_dir() and os.access(SHM_DIR, os.W_OK) and bool(host_id())


def min_bytes() -> int:
    """Buffers at least this large take the shared-memory path (``XPARL_SHM_MIN_BYTES``)."""
    return int(config.get("SHM_MIN_BYTES"))


def export(buffers: list) -> tuple[bytes, list] | None:
    """Moves large buffers into shm files.

    Args:
        buffers: the out-of-band buffers of a message.

    Returns:
        ``(manifest, remaining frames)``, or None when no buffer is large enough.
    """
    threshold = min_bytes()
    if not any(memoryview(b).nbytes >= threshold for b in buffers):
        return None
    entries = []
    frames = []
    for buf in buffers:
        view = memoryview(buf).cast("B")
        if view.nbytes < threshold:
            entries.append(_ENTRY.pack(KIND_FRAME, b"", view.nbytes))
            frames.append(buf)
        else:
            _one_off_or_inline(buf, view, entries, frames)
    return b"".join(entries), frames


def _one_off_or_inline(buf: object, view: memoryview, entries: list, frames: list) -> None:
    """Adds ``buf`` to a manifest being built: in a one-off file, or inline when ``/dev/shm`` is full."""
    entry = _write_file(view)
    if entry is None:
        entries.append(_ENTRY.pack(KIND_FRAME, b"", view.nbytes))
        frames.append(buf)
    else:
        entries.append(entry)


def _write_file(view: memoryview) -> bytes | None:
    """Writes a buffer into a fresh one-off shm file; returns its manifest entry, or None when ``/dev/shm``
    has no room for it (the caller sends the buffer inline; nothing is left behind)."""
    nbytes = view.nbytes
    try:
        room = os.statvfs(SHM_DIR)
        if room.f_bavail * room.f_frsize < nbytes:  # (checked first: writing until ENOSPC wastes a copy)
            raise OSError(errno.ENOSPC, f"{room.f_bavail * room.f_frsize} bytes free")
        name = f"{_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
        path = SHM_DIR / name
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as exc:
        _warn_full(nbytes, exc)
        return None
    try:
        written = 0
        while written < nbytes:
            written += os.write(fd, view[written:])
    except OSError as exc:  # ENOSPC: another process took the room meanwhile
        os.close(fd)
        os.unlink(path)
        _warn_full(nbytes, exc)
        return None
    os.close(fd)
    return _ENTRY.pack(KIND_SHM, name.encode(), nbytes)


def _warn_full(nbytes: int, exc: OSError) -> None:
    if _Full.warned:
        return
    _Full.warned = True
    logger.warning(
        "no room in %s for a %d-byte buffer (%s): large buffers travel inline, more slowly. Make room in %s "
        "(in Docker: run with --shm-size=2g or more), or set XPARL_SHM_MIN_BYTES above your largest "
        "array to stop trying (this warning is shown once)", SHM_DIR, nbytes, exc.strerror or exc, SHM_DIR,
    )


def _checked_name(raw_name: bytes) -> str:
    name = raw_name.rstrip(b"\0").decode()
    if not name.startswith(_PREFIX) or "/" in name or "\0" in name:
        raise ValueError(f"refusing shared-memory file {name!r}")
    return name


def restore(manifest: bytes | memoryview, frames: list, channel: Channel | None = None) -> list:
    """Rebuilds the buffer list of a message from its manifest.

    One-off files are mapped and unlinked; arena regions become read-only views of the peer's arena
    (``channel``); release entries free regions of this side's arenas.

    Args:
        manifest: the manifest frame (signed with the message).
        frames: the message's remaining frames (buffers that travelled inline).
        channel: the connection's arenas; None on connections without them (arena entries are refused).

    Raises:
        ValueError: a malformed manifest, a file name outside the xparl namespace, or a region outside
            its arena.
        OSError: a named file is gone.
    """
    manifest = bytes(manifest)
    buffers = []
    frame_iter = iter(frames)
    pos, end = 0, len(manifest)
    while pos < end:
        kind = manifest[pos]
        if kind in (KIND_ARENA, KIND_RELEASE):
            if channel is None:
                raise ValueError("arena entries on a connection without shared-memory arenas")
            if pos + _REGION.size > end:
                raise ValueError("malformed shared-memory manifest")
            _, raw_name, size, offset = _REGION.unpack_from(manifest, pos)
            pos += _REGION.size
            name = _checked_name(raw_name)
            if kind == KIND_RELEASE:
                channel.free(name, offset)
            else:
                buffers.append(channel.view(name, offset, size))
            continue
        if kind not in (KIND_FRAME, KIND_SHM) or pos + _ENTRY.size > end:
            raise ValueError("malformed shared-memory manifest")
        _, raw_name, size = _ENTRY.unpack_from(manifest, pos)
        pos += _ENTRY.size
        if kind == KIND_FRAME:
            buffers.append(memoryview(next(frame_iter)))
            continue
        path = SHM_DIR / _checked_name(raw_name)
        fd = os.open(path, os.O_RDONLY)
        try:
            mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
        finally:
            os.close(fd)
            os.unlink(path)
        buffers.append(memoryview(mapped))
    return buffers


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
        """A read-only view of a region of the peer's arena; its release is reported when it is freed.

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
        return memoryview(region).cast("B").toreadonly()

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


def sweep() -> int:
    """Removes shm files whose sending process has ended; returns how many were removed."""
    if not available():
        return 0
    removed = 0
    for path in SHM_DIR.glob(_PREFIX + "*"):
        try:
            pid = int(path.name[len(_PREFIX) :].split("-", 1)[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed
