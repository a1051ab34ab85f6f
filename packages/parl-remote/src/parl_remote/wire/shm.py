"""Same-host fast path for large buffers: files in ``/dev/shm`` instead of TCP frames.

When client and job run on the same machine (same hostname and boot id), every out-of-band buffer of
at least ``SHM_MIN_BYTES`` (a large numpy array) is written once into a fresh file
``/dev/shm/xparl-<sender pid>-<random>`` (mode 0600) and the message carries only its name and size
in a *manifest* frame. The receiver maps the file and unlinks it at once: the array it
unpickles uses the mapped pages directly (zero copy on the receiving side, and writable: the file is the
receiver's alone), and the memory is freed when the array is.

Security: the manifest is covered by the message's HMAC signature like every frame; the file's bytes
are not hashed (hashing 100 MiB costs ~60 ms, the whole budget) but are protected the way the token
file is, by the operating system: the file belongs to the user and is readable and writable by that
user only. Files whose sender died before they were received are removed by the worker's sweep.

Arenas: a same-host connection reuses pre-faulted arena files instead (``shm_arena.py``).

A full ``/dev/shm`` (Docker gives containers 64 MiB unless run with ``--shm-size``) costs speed, never a
call: a buffer that fits neither an arena nor a one-off file travels inline in the message, like
between hosts, and the process logs one warning saying how to make room.
"""

from __future__ import annotations

import errno
import functools
import logging
import mmap
import os
import pathlib
import secrets
import socket
import struct
from typing import Protocol

from parl_remote import config


class ArenaChannel(Protocol):
    """What :func:`restore` uses of a connection's arenas (``shm_arena.Channel``, which builds on this module)."""

    def free(self, name: str, offset: int) -> None: ...

    def view(self, name: str, offset: int, size: int) -> memoryview: ...


SHM_DIR = pathlib.Path("/dev/shm")
_PREFIX = "xparl-"
_ENTRY = struct.Struct("!B40sQ")  # kind (0: the next frame, 1: a shm file), file name, size
KIND_FRAME = 0
KIND_SHM = 1
_REGION = struct.Struct("!B40sQQ")  # kind, arena file name, size, offset
KIND_ARENA = 2  # a region of the sender's arena (``Channel``)
KIND_RELEASE = 3  # the sender no longer uses this region of the receiver's arena (size 0)

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
        "array to stop trying (this warning is shown once)",
        SHM_DIR,
        nbytes,
        exc.strerror or exc,
        SHM_DIR,
    )


def _checked_name(raw_name: bytes) -> str:
    name = raw_name.rstrip(b"\0").decode()
    if not name.startswith(_PREFIX) or "/" in name or "\0" in name:
        raise ValueError(f"refusing shared-memory file {name!r}")
    return name


def restore(manifest: bytes | memoryview, frames: list, channel: ArenaChannel | None = None) -> list:
    """Rebuilds the buffer list of a message from its manifest.

    One-off files are mapped and unlinked; arena regions become writable views of the peer's arena
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
        fd = os.open(path, os.O_RDWR)
        try:  # writable (the file is this receiver's alone once unlinked below): in-place updates work
            mapped = mmap.mmap(fd, size) if size else bytearray()
        finally:
            os.close(fd)
            os.unlink(path)
        buffers.append(memoryview(mapped))
    return buffers


def write_proof() -> tuple[str, str] | None:
    """Writes a fresh nonce into a ``/dev/shm`` file (mode 0600) and returns ``(file name, nonce)``, or None when
    ``/dev/shm`` is unavailable or full. A peer that reads the same nonce there shares this ``/dev/shm`` (the
    same host id alone does not prove it: containers and namespaces can share a hostname and a boot)."""
    if not available():
        return None
    nonce = secrets.token_hex(16)
    name = f"{_PREFIX}{os.getpid()}-p{secrets.token_hex(8)}"
    try:
        fd = os.open(SHM_DIR / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, nonce.encode())
        finally:
            os.close(fd)
    except OSError:
        return None
    return name, nonce


def check_proof(proof: object) -> bool:
    """True when ``proof`` (a ``write_proof`` result, from a peer) names a ``/dev/shm`` file here holding its nonce."""
    if not (isinstance(proof, (list, tuple)) and len(proof) == 2 and all(isinstance(x, str) for x in proof)):
        return False
    name, nonce = proof
    if not name.startswith(_PREFIX) or "/" in name or not nonce or not available():
        return False
    try:
        return (SHM_DIR / name).read_bytes() == nonce.encode()
    except OSError:
        return False


def remove_proof(proof: tuple[str, str] | None) -> None:
    """Removes the file of a ``write_proof`` result (None: nothing to do)."""
    if proof is not None:
        try:
            (SHM_DIR / proof[0]).unlink()
        except OSError:
            pass


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
