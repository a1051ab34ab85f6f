"""PARL's user-facing logger: ``from parl.utils import logger; logger.info("...")``.

A thin layer over the standard :mod:`logging` package, logger name ``"parl"``. Importing this module
configures nothing. On the first message, if neither the ``"parl"`` logger nor the root logger has a
handler, a stdout handler (level INFO, PARL's ``[MM-DD HH:MM:SS file:line] message`` format) is attached
to the ``"parl"`` logger; if the application configured logging itself, messages simply propagate to
its handlers. :func:`set_dir` additionally writes every message to ``<dirname>/log.log``.

Unlike the original PARL, :func:`set_dir` never deletes an existing directory; :func:`auto_set_dir`
deletes only when asked with ``action="d"``.
"""

from __future__ import annotations

import datetime
import logging
import os
import shutil
import sys
import threading

__all__ = [
    "LOGGER_NAME", "auto_set_dir", "critical", "debug", "error", "exception", "get_dir", "get_logger",
    "info", "set_dir", "set_level", "setLevel", "warn", "warning",
]

LOGGER_NAME = "parl"
_FORMAT = "[%(asctime)s %(filename)s:%(lineno)d] %(levelname).3s %(message)s"
_DATEFMT = "%m-%d %H:%M:%S"

_logger = logging.getLogger(LOGGER_NAME)
_lock = threading.Lock()
_stdout_handler: logging.Handler | None = None
_file_handler: logging.FileHandler | None = None
_dir: str | None = None


def _formatter() -> logging.Formatter:
    return logging.Formatter(_FORMAT, datefmt=_DATEFMT)


def _ensure_handler() -> None:
    """Attach the stdout handler on first use when nobody configured logging (see the module doc)."""
    global _stdout_handler
    if _stdout_handler is not None or _logger.handlers and _logger.handlers != [_file_handler]:
        return
    with _lock:
        if _stdout_handler is not None or logging.getLogger().handlers:
            return
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(_formatter())
        _logger.addHandler(handler)
        if _logger.level == logging.NOTSET:
            _logger.setLevel(logging.INFO)
        _logger.propagate = False
        _stdout_handler = handler


def get_logger() -> logging.Logger:
    """Return the underlying :class:`logging.Logger` (name ``"parl"``), its handler set up as on first use."""
    _ensure_handler()
    return _logger


def _log(level: int, msg: object, *args: object, **kwargs: object) -> None:
    _ensure_handler()
    kwargs.setdefault("stacklevel", 3)
    _logger.log(level, msg, *args, **kwargs)


def debug(msg: object, *args: object, **kwargs: object) -> None:
    """Log ``msg % args`` at DEBUG level."""
    _log(logging.DEBUG, msg, *args, **kwargs)


def info(msg: object, *args: object, **kwargs: object) -> None:
    """Log ``msg % args`` at INFO level."""
    _log(logging.INFO, msg, *args, **kwargs)


def warning(msg: object, *args: object, **kwargs: object) -> None:
    """Log ``msg % args`` at WARNING level."""
    _log(logging.WARNING, msg, *args, **kwargs)


warn = warning


def error(msg: object, *args: object, **kwargs: object) -> None:
    """Log ``msg % args`` at ERROR level."""
    _log(logging.ERROR, msg, *args, **kwargs)


def critical(msg: object, *args: object, **kwargs: object) -> None:
    """Log ``msg % args`` at CRITICAL level."""
    _log(logging.CRITICAL, msg, *args, **kwargs)


def exception(msg: object, *args: object, **kwargs: object) -> None:
    """Log ``msg % args`` at ERROR level with the current exception's traceback."""
    kwargs.setdefault("exc_info", True)
    _log(logging.ERROR, msg, *args, **kwargs)


def set_level(level: int | str) -> None:
    """Set the ``"parl"`` logger's level.

    Args:
        level: a :mod:`logging` level (``logging.DEBUG``) or its name (``"debug"``, case-insensitive).

    Raises:
        ValueError: ``level`` is not a known level name.
    """
    if isinstance(level, str):
        name = level.strip().upper()
        resolved = logging.getLevelName(name)
        if not isinstance(resolved, int):
            raise ValueError(f"unknown log level {level!r}; use one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        level = resolved
    _ensure_handler()
    _logger.setLevel(level)


setLevel = set_level


def set_dir(dirname: str | os.PathLike) -> None:
    """Also write every message to ``<dirname>/log.log`` (appending); the directory is created.

    A previous :func:`set_dir` file handler is replaced. Existing files are kept.

    Args:
        dirname: the log directory (also used by :mod:`parl_core.utils.summary` for its event files).
    """
    global _file_handler, _dir
    dirname = os.fspath(dirname)
    os.makedirs(dirname, exist_ok=True)
    _ensure_handler()
    with _lock:
        if _file_handler is not None:
            _logger.removeHandler(_file_handler)
            _file_handler.close()
        handler = logging.FileHandler(os.path.join(dirname, "log.log"), encoding="utf-8")
        handler.setFormatter(_formatter())
        _logger.addHandler(handler)
        if _logger.level == logging.NOTSET:
            _logger.setLevel(logging.INFO)
        _file_handler = handler
        _dir = dirname


def get_dir() -> str | None:
    """Return the directory given to :func:`set_dir` (or :func:`auto_set_dir`), or ``None``."""
    return _dir


def _script_name() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return "interactive"
    return os.path.splitext(os.path.basename(path))[0]


def _unused(path: str) -> str:
    """``path``, or ``path-1``, ``path-2``, ... whichever does not exist yet."""
    candidate, n = path, 0
    while os.path.exists(candidate):
        n += 1
        candidate = f"{path}-{n}"
    return candidate


def auto_set_dir(action: str | None = None) -> str:
    """Log to ``./train_log/<name of the running script>`` (PARL's convention).

    Args:
        action: what to do when the directory already exists: ``None`` or ``"k"`` keep it and append,
            ``"n"`` use a new directory with a timestamp suffix, ``"b"`` rename the old one with a
            timestamp suffix (backup) and start afresh, ``"d"`` delete the old one.

    Returns:
        The directory in use.

    Raises:
        ValueError: ``action`` is not one of the above.
    """
    if action not in (None, "k", "n", "b", "d"):
        raise ValueError(f"auto_set_dir: unknown action {action!r}; use None/'k' (keep), 'n' (new), "
                         "'b' (backup) or 'd' (delete)")
    dirname = os.path.join("train_log", _script_name())
    if os.path.isdir(dirname) and action not in (None, "k"):
        stamped = _unused(f"{dirname}-{datetime.datetime.now().strftime('%m%d-%H%M%S')}")
        if action == "n":
            dirname = stamped
        elif action == "b":
            os.rename(dirname, stamped)
        else:
            shutil.rmtree(dirname)
    set_dir(dirname)
    return dirname
