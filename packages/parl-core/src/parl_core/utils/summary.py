"""Tensorboard scalars and histograms: ``from parl.utils import summary; summary.add_scalar(tag, v, step)``.

One process-wide ``tensorboardX.SummaryWriter``, created lazily on the first ``add_*`` call (importing
this module imports neither tensorboardX nor torch) in, by priority: the directory given to
:func:`set_logdir`, the logger's directory (:func:`parl_core.utils.logger.set_dir`), else
``./train_log/<script name>``. Thread-safe.

tensorboardX writes events from a background thread and flushes them to disk about every
``FLUSH_SECS`` seconds, so tensorboard shows a running job's curves with that delay; :func:`flush` is a
true barrier (tensorboardX's own ``flush`` does not wait for queued events): it closes the event file,
and the next ``add_*`` call opens a new one in the same directory (tensorboard merges them).
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from parl_core.utils import logger

__all__ = ["add_histogram", "add_scalar", "close", "flush", "get_logdir", "get_writer", "set_logdir"]

_lock = threading.RLock()
_writer: Any = None
_logdir: str | None = None
_purge_step: int | None = None
_atexit_registered = False

FLUSH_SECS = 2.0


def set_logdir(logdir: str | os.PathLike, purge_step: int | None = None) -> None:
    """Write the following summaries to ``logdir`` (the current writer, if any, is closed).

    Args:
        logdir: directory for the event files; created when the writer is.
        purge_step: when resuming a run: tensorboard drops the events of the earlier files in ``logdir``
            whose step is ``>= purge_step`` (those written after the checkpoint the run resumes from).
    """
    global _logdir, _purge_step
    with _lock:
        close()
        _logdir = os.fspath(logdir)
        _purge_step = purge_step


def get_logdir() -> str:
    """Return the directory the writer uses (or will use)."""
    if _logdir is not None:
        return _logdir
    if _writer is not None:
        return _writer.logdir
    return logger.get_dir() or os.path.join("train_log", logger._script_name())


def get_writer() -> Any:
    """Return the ``tensorboardX.SummaryWriter``, creating it on first use.

    Raises:
        ImportError: tensorboardX is not installed (``pip install tensorboardX``).
    """
    global _writer, _atexit_registered, _purge_step
    with _lock:
        if _writer is None:
            try:
                from tensorboardX import SummaryWriter
            except ImportError as err:  # pragma: no cover - tensorboardX is a dependency
                raise ImportError("parl.utils.summary needs tensorboardX: `pip install tensorboardX`") from err
            _writer = SummaryWriter(logdir=get_logdir(), flush_secs=FLUSH_SECS, purge_step=_purge_step)
            _purge_step = None  # (the first event file after set_logdir purges; later ones continue it)
            if not _atexit_registered:
                atexit.register(close)
                _atexit_registered = True
        return _writer


def add_scalar(tag: str, scalar_value: float, global_step: int | None = None) -> None:
    """Record one scalar (e.g. ``summary.add_scalar("train/episode_return", 200.0, step)``).

    Args:
        tag: the series name; namespace it (``"eval/return_mean"``).
        scalar_value: a Python or numpy number (or a 0-d array / tensor).
        global_step: the x coordinate, e.g. environment steps.
    """
    with _lock:
        get_writer().add_scalar(tag, scalar_value, global_step)


def add_histogram(tag: str, values: Any, global_step: int | None = None, bins: str = "auto") -> None:
    """Record a histogram of ``values`` (any array-like of numbers).

    Args:
        tag: the series name.
        values: array-like of numbers, any shape (flattened).
        global_step: the x coordinate.
        bins: tensorboardX's binning (``"auto"``, ``"tensorflow"``, or an int).
    """
    with _lock:
        get_writer().add_histogram(tag, values, global_step, bins=bins)


def flush() -> None:
    """Write every pending event to disk before returning (no-op when no writer exists).

    The current event file is closed; the next ``add_*`` call opens a new one in the same directory.
    """
    close()


def close() -> None:
    """Flush and close the writer; the next ``add_*`` call opens a new event file."""
    global _writer
    with _lock:
        if _writer is not None:
            _writer.close()
            _writer = None
