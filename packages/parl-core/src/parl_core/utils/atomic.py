"""Crash-safe file writes: a file is replaced whole or not at all, and several files change as one unit.

``with atomic_write(path) as f: f.write(...)`` writes into a temporary file in ``path``'s own folder
(``.<name>.<pid>.<random>.tmp``), then flushes it, fsyncs it, renames it over ``path`` with
``os.replace`` (atomic on POSIX and on Windows within one file system) and fsyncs the folder, so the
rename itself survives a power loss. A process killed at any moment (``kill -9``, out-of-memory killer, a
pre-empted cluster job) leaves ``path`` holding either its previous bytes or the new ones, never a mix,
never an empty or truncated file. If the block raises, the temporary file is removed and ``path`` is
untouched.

A kill can leave the temporary file behind. Readers never open it (they only open ``path``), and the next
``atomic_write`` to the same ``path`` deletes the temporary files of that path whose writing process is no
longer running (:func:`remove_stale_temps`), so debris neither accumulates nor trips a later save or load.

Several files: :func:`atomic_write_many` writes every file under a temporary name first, then renames them
in the order given. A crash can happen between two renames, so a reader sees a prefix of the renames done:
the caller makes the first file the commit record, one that tells a reader which contents of the other
files belong to it (e.g. their SHA-256 digests, and the digests of the contents they replace), so a reader
can always pick a consistent set. ``parl_core``'s ``Agent.save`` is built that way (see
``parl_core._agent_base``).

Limits: the guarantee covers process death and, when the file system honours ``fsync`` (local ext4 / xfs /
btrfs / APFS; not every network file system does), power loss; it does not cover a disk that corrupts
written data. The stale-file cleanup judges liveness by process id on this machine: on a folder shared by
several machines, a save can delete the temporary file of a save to the same path running on another
machine at that moment (that save then fails with ``FileNotFoundError``; the file stays whole). On
Windows leftovers of killed saves are not removed automatically (delete ``.<name>.*.tmp`` by hand).
Two processes saving to the same ``path`` at the same time each produce a whole file; the last rename wins.

This module uses the standard library only and has no import-time side effects.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from typing import IO

__all__ = ["atomic_write", "atomic_write_many", "atomic_remove", "fsync_dir", "remove_stale_temps", "temp_path"]

_TEMP_SUFFIX = ".tmp"


def temp_path(path: str | os.PathLike) -> str:
    """A fresh temporary name for ``path`` in its own folder: ``<folder>/.<name>.<pid>.<16 hex>.tmp``.

    Args:
        path: the file the temporary one will replace.

    Returns:
        the temporary path (not created).
    """
    path = os.fspath(path)
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(8)}{_TEMP_SUFFIX}")


def _pid_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process there: treat every other pid as running
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's), or the check is not possible: keep its file
    return True


def remove_stale_temps(path: str | os.PathLike) -> list[str]:
    """Delete the temporary files that writes to ``path`` left behind when their process died.

    A file ``.<name>.<pid>.<hex>.tmp`` beside ``path`` is removed when no process ``pid`` runs on this
    machine; files of running processes (a concurrent save) are kept. Errors (a file removed meanwhile, a
    read-only folder) are ignored.

    Args:
        path: the file whose leftovers to remove.

    Returns:
        the paths removed.
    """
    path = os.fspath(path)
    folder, name = os.path.split(path)
    prefix = f".{name}."
    removed = []
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return removed
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(_TEMP_SUFFIX)):
            continue
        parts = entry[len(prefix):-len(_TEMP_SUFFIX)].split(".")
        if len(parts) != 2 or not parts[0].isdigit() or len(parts[1]) != 16:
            continue  # another file whose name happens to start like ours (".model.ckpt.state.<...>.tmp")
        if _pid_running(int(parts[0])):
            continue
        stale = os.path.join(folder, entry)
        try:
            os.remove(stale)
        except OSError:
            continue
        removed.append(stale)
    return removed


def fsync_dir(folder: str | os.PathLike) -> None:
    """``fsync`` a folder, so that renames and deletions in it survive a power loss.

    A no-op where folders cannot be opened (Windows); errors of file systems that do not support it are ignored.

    Args:
        folder: the folder ("" means the current one).
    """
    folder = os.fspath(folder) or "."
    if os.name == "nt":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _keep_mode(final: str, fd: int) -> None:
    """Give the new file the permission bits of the file it replaces (an in-place write would keep them)."""
    try:
        mode = stat.S_IMODE(os.stat(final).st_mode)
    except OSError:
        return  # no file yet: the new one keeps the umask's mode, as open(path, "wb") would give it
    try:
        os.fchmod(fd, mode)
    except (AttributeError, OSError):  # no fchmod (Windows), or not permitted
        pass


def _discard(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


@contextlib.contextmanager
def atomic_write_many(paths: Sequence[str | os.PathLike], mode: str = "wb") -> Iterator[list[IO]]:
    """Write several files so that each is replaced whole; yield one open file per path.

    On a normal exit of the block every file is flushed and fsync-ed, then renamed over its path in
    the order of ``paths`` (the folder fsync-ed after each rename, so the order also holds after a
    power loss). After a crash a reader sees the first ``k`` renames done, for some ``k``: make ``paths[0]``
    the commit record that lets a reader tell which contents of the others belong with it (see the module
    docstring). If the block raises, every temporary file is removed and no path is touched.

    Args:
        paths: the files to write; parent folders must exist. Stale temporary files of each are removed
            first (:func:`remove_stale_temps`).
        mode: ``"wb"`` (default) or ``"w"`` (text, UTF-8).

    Yields:
        the open temporary files, in the order of ``paths`` (each has ``.name``, its temporary path).

    Raises:
        ValueError: ``mode`` is not ``"wb"`` or ``"w"``, or a path appears twice.
        OSError: a file cannot be created, written or renamed (nothing is renamed if a write fails).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', got {mode!r}")
    finals = [os.fspath(p) for p in paths]
    if len({os.path.abspath(p) for p in finals}) != len(finals):
        raise ValueError(f"atomic_write_many got the same path twice: {finals}")
    for final in finals:
        remove_stale_temps(final)
    temps: list[str] = []
    files: list[IO] = []
    try:
        for final in finals:
            temp = temp_path(final)
            temps.append(temp)
            files.append(open(temp, "xb") if mode == "wb" else open(temp, "x", encoding="utf-8"))
        yield files
        for file, final in zip(files, finals, strict=True):
            file.flush()
            _keep_mode(final, file.fileno())
            os.fsync(file.fileno())
            file.close()
    except BaseException:
        for file in files:
            file.close()
        for temp in temps:
            _discard(temp)
        raise
    done = 0
    try:
        for temp, final in zip(temps, finals, strict=True):
            os.replace(temp, final)
            done += 1
            fsync_dir(os.path.dirname(final))
    finally:
        for temp in temps[done:]:
            _discard(temp)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Replace ``path`` whole or not at all: write the block's output to a temporary file, then rename it.

    Example: ``with atomic_write("run/model.pt") as f: torch.save(state, f)`` (``np.savez(f, ...)``,
    ``f.write(data)`` alike; pass the file object, not the path). See the module docstring for the
    guarantee and its limits.

    Args:
        path: the file to write; its parent folder must exist. Stale temporary files of earlier killed
            writes to ``path`` are removed first.
        mode: ``"wb"`` (default) or ``"w"`` (text, UTF-8).

    Yields:
        the open temporary file (``.name`` is its path).

    Raises:
        ValueError: ``mode`` is not ``"wb"`` or ``"w"``.
        OSError: the file cannot be created, written or renamed (``path`` is then untouched).
    """
    with atomic_write_many([path], mode) as files:
        yield files[0]


def atomic_remove(path: str | os.PathLike) -> bool:
    """Delete ``path`` if it exists and ``fsync`` its folder (the deletion survives a power loss).

    Args:
        path: the file to delete.

    Returns:
        whether a file was deleted.

    Raises:
        OSError: the file exists but cannot be deleted (e.g. it is a folder, or permissions).
    """
    path = os.fspath(path)
    try:
        os.remove(path)
    except FileNotFoundError:
        return False
    fsync_dir(os.path.dirname(path))
    return True
