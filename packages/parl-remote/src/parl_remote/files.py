"""File distribution: the entry script's Python files plus ``distributed_files``, shipped once per hash.

The client collects the ``*.py`` files of the entry script's directory, its sub-packages (folders with
an ``__init__.py``, recursively), and every file matched by the ``distributed_files`` globs, into a
bundle ``{relative path: bytes}`` identified by the SHA-256 of its content. A job asks for the bundle
only when the worker's cache (``<state dir>/cache/files/<hash>``) lacks it, so it crosses the network
once per worker and content, not once per actor (PARL re-sends it per actor).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import pathlib
import shutil
import sys
import sysconfig
import tempfile

logger = logging.getLogger(__name__)

MAX_BUNDLE_BYTES = 64 * 2**20
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"}


def entry_directory() -> pathlib.Path | None:
    """The directory of the running script, or None (interactive session, notebook, installed tool)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return None
    directory = pathlib.Path(path).resolve().parent
    for key in ("purelib", "platlib", "stdlib"):
        lib = pathlib.Path(sysconfig.get_paths()[key]).resolve()
        if directory == lib or lib in directory.parents:
            return None  # e.g. `python -m pytest`: the entry is an installed module, not the user's code
    if pathlib.Path(sys.prefix).resolve() in directory.parents:
        return None  # a console script of a virtualenv
    return directory


def _python_files(root: pathlib.Path) -> list[pathlib.Path]:
    found = sorted(p for p in root.glob("*.py") if p.is_file())
    for sub in sorted(root.iterdir()):
        if (
            sub.is_dir()
            and not sub.name.startswith(".")
            and sub.name not in _SKIP_DIRS
            and (sub / "__init__.py").exists()
        ):
            found.extend(_python_files(sub))
    return found


class DistributedFilesError(FileNotFoundError, ValueError):
    """A ``distributed_files`` pattern that matches no file (a ``ValueError`` as in PARL, and a
    ``FileNotFoundError``)."""


def collect(distributed_files: tuple[str, ...] | list[str], entry_dir: pathlib.Path | None) -> dict[str, bytes]:
    """Reads the files to ship.

    Args:
        distributed_files: glob patterns (``**`` allowed), relative to the current directory or
            absolute. A file under the current directory keeps its relative path; another file is
            placed at the top level under its own name.
        entry_dir: the entry script's directory (its ``*.py`` and sub-packages are shipped), or None.

    Returns:
        ``{relative posix path: content}``.

    Raises:
        DistributedFilesError: a pattern that matches no file (a ``ValueError`` and a ``FileNotFoundError``).
        ValueError: the bundle exceeds 64 MiB.
    """
    files: dict[str, bytes] = {}
    if entry_dir is not None:
        for path in _python_files(entry_dir):
            files[path.relative_to(entry_dir).as_posix()] = path.read_bytes()
    cwd = pathlib.Path.cwd().resolve()
    for pattern in distributed_files:
        matches = [pathlib.Path(m) for m in glob.glob(str(pattern), recursive=True)]
        matches = [m for m in matches if m.is_file()] + [
            f for m in matches if m.is_dir() for f in m.rglob("*") if f.is_file() and "__pycache__" not in f.parts
        ]
        if not matches and not any(pathlib.Path(m).is_dir() for m in glob.glob(str(pattern), recursive=True)):
            raise DistributedFilesError(
                f"distributed_files pattern {pattern!r} matches no file (relative to {cwd}); fix the path or pattern"
            )
        for match in matches:
            resolved = match.resolve()
            rel = resolved.relative_to(cwd).as_posix() if cwd in resolved.parents else resolved.name
            files[rel] = resolved.read_bytes()
        for folder in (pathlib.Path(m) for m in glob.glob(str(pattern), recursive=True)):
            for empty in [folder, *folder.rglob("*")] if folder.is_dir() else []:
                if empty.is_dir() and not any(empty.iterdir()):  # shipped as "path/": created remotely
                    resolved = empty.resolve()
                    rel = resolved.relative_to(cwd).as_posix() if cwd in resolved.parents else resolved.name
                    files[rel + "/"] = b""
    total = sum(len(v) for v in files.values())
    if total > MAX_BUNDLE_BYTES:
        raise ValueError(
            f"the files to ship weigh {total / 2**20:.1f} MiB (> 64 MiB); run the script from a smaller "
            "directory or narrow distributed_files"
        )
    return files


def bundle_hash(files: dict[str, bytes]) -> str:
    """SHA-256 (hex) over the sorted paths and contents of a bundle."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + len(files[rel]).to_bytes(8, "big"))
        digest.update(files[rel])
    return digest.hexdigest()


def cached_dir(cache_root: pathlib.Path, files_hash: str) -> pathlib.Path | None:
    """The extracted bundle for ``files_hash`` in the worker's cache, or None when not there yet."""
    path = cache_root / files_hash
    return path if (path / ".complete").exists() else None


def extract(cache_root: pathlib.Path, files_hash: str, files: dict[str, bytes]) -> pathlib.Path:
    """Writes a bundle into the cache atomically (temporary folder, then rename) and returns its folder.

    Raises:
        ValueError: the content does not match ``files_hash`` or a path escapes the bundle.
    """
    if bundle_hash(files) != files_hash:
        raise ValueError("the shipped files do not match their hash")
    cache_root.mkdir(parents=True, exist_ok=True)
    final = cache_root / files_hash
    if cached_dir(cache_root, files_hash) is not None:
        return final
    tmp = pathlib.Path(tempfile.mkdtemp(dir=cache_root, prefix=".tmp-"))
    for rel, content in files.items():
        target = (tmp / rel).resolve()
        if tmp.resolve() not in target.parents:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ValueError(f"refusing to write {rel!r} outside the bundle folder")
        if rel.endswith("/"):  # an empty folder of the bundle
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    (tmp / ".complete").write_bytes(b"")
    try:
        os.rename(tmp, final)
    except OSError:  # another job of this worker extracted it first
        shutil.rmtree(tmp, ignore_errors=True)
    return final
