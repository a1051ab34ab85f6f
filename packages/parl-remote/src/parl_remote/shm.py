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
"""

from __future__ import annotations

import functools
import mmap
import os
import pathlib
import secrets
import socket
import struct

from parl_remote import config

SHM_DIR = pathlib.Path("/dev/shm")
_PREFIX = "xparl-"
_ENTRY = struct.Struct("!B40sQ")  # kind (0: the next frame, 1: a shm file), file name, size
KIND_FRAME = 0
KIND_SHM = 1


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
            continue
        name = f"{_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
        fd = os.open(SHM_DIR / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            written = 0
            while written < view.nbytes:
                written += os.write(fd, view[written:])
        finally:
            os.close(fd)
        entries.append(_ENTRY.pack(KIND_SHM, name.encode(), view.nbytes))
    return b"".join(entries), frames


def restore(manifest: bytes | memoryview, frames: list) -> list:
    """Rebuilds the buffer list of a message from its manifest (maps and unlinks the shm files).

    Raises:
        ValueError: a malformed manifest or a file name outside the xparl namespace.
    """
    manifest = bytes(manifest)
    if len(manifest) % _ENTRY.size:
        raise ValueError("malformed shared-memory manifest")
    buffers = []
    frame_iter = iter(frames)
    for offset in range(0, len(manifest), _ENTRY.size):
        kind, raw_name, size = _ENTRY.unpack_from(manifest, offset)
        if kind == KIND_FRAME:
            buffers.append(memoryview(next(frame_iter)))
            continue
        name = raw_name.rstrip(b"\0").decode()
        if not name.startswith(_PREFIX) or "/" in name:
            raise ValueError(f"refusing shared-memory file {name!r}")
        path = SHM_DIR / name
        fd = os.open(path, os.O_RDONLY)
        try:
            mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
        finally:
            os.close(fd)
            os.unlink(path)
        buffers.append(memoryview(mapped))
    return buffers


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
