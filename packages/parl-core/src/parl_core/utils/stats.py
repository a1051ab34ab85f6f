"""Small running statistics and a CSV logger (PARL's ``TimeStat``, ``WindowStat``, ``CSVLogger``)."""

from __future__ import annotations

import csv
import os
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["CSVLogger", "TimeStat", "WindowStat"]


class WindowStat:
    """Mean / min / max over the last ``window_size`` values added.

    Args:
        window_size: how many recent values to keep (>= 1).
    """

    def __init__(self, window_size: int) -> None:
        if window_size < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size}")
        self.items: deque[float] = deque(maxlen=window_size)
        self.count = 0

    def add(self, value: float) -> None:
        """Add one value."""
        self.items.append(float(value))
        self.count += 1

    @property
    def mean(self) -> float | None:
        """Mean of the window (``None`` when empty)."""
        return float(np.mean(self.items)) if self.items else None

    @property
    def min(self) -> float | None:
        """Minimum of the window (``None`` when empty)."""
        return min(self.items) if self.items else None

    @property
    def max(self) -> float | None:
        """Maximum of the window (``None`` when empty)."""
        return max(self.items) if self.items else None


class TimeStat(WindowStat):
    """A :class:`WindowStat` of durations in seconds, filled by ``with timer:`` blocks.

    Example::

        learn_time = TimeStat(100)
        with learn_time:
            agent.learn(...)
        print(learn_time.mean)

    Args:
        window_size: how many recent durations to keep (PARL's default: 1, the last one).
    """

    def __init__(self, window_size: int = 1) -> None:
        super().__init__(window_size)

    def __enter__(self) -> TimeStat:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.add(time.perf_counter() - self._start)


class CSVLogger:
    """Append dicts as CSV rows; the columns are fixed by the first row. Thread-safe.

    Args:
        output_file: the CSV file to write (parents are created; an existing file is overwritten).
        resume_at: continue an existing file instead: keep its first ``resume_at`` bytes (a value
            :meth:`position` returned), drop the rest and append after them, under the file's own header.

    Raises:
        ValueError: ``resume_at`` is beyond the end of the file (the file was replaced or cut since);
            (from :meth:`log_dict`) a row's keys differ from the first row's.
    """

    def __init__(self, output_file: str | os.PathLike, resume_at: int | None = None) -> None:
        output_file = os.fspath(output_file)
        parent = os.path.dirname(output_file)
        if parent:
            os.makedirs(parent, exist_ok=True)
        self._writer: csv.DictWriter | None = None
        self._keys: list[str] | None = None
        self._lock = threading.Lock()
        if resume_at is None:
            self._file = open(output_file, "w", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
            return
        open(output_file, "a").close()  # (create it if missing)
        size = os.path.getsize(output_file)
        if not 0 <= resume_at <= size:
            raise ValueError(f"{output_file} has {size} bytes, fewer than the {resume_at} to keep: it was replaced or "
                             "cut since; restore it or start the run over")
        with open(output_file, "r+b") as raw:
            raw.truncate(resume_at)
        self._file = open(output_file, "a", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
        with open(output_file, newline="", encoding="utf-8") as existing:
            header = next(csv.reader(existing), None)
        if header:
            self._keys = header
            self._writer = csv.DictWriter(self._file, fieldnames=self._keys)

    def position(self) -> int:
        """Flush and return the file's length in bytes (the ``resume_at`` that continues after this row)."""
        with self._lock:
            self._file.flush()
            return self._file.tell()

    def log_dict(self, result: Mapping[str, Any]) -> None:
        """Write one row; the first call writes the header.

        Raises:
            ValueError: the keys differ from the first row's.
        """
        with self._lock:
            if self._writer is None:
                self._keys = list(result)
                self._writer = csv.DictWriter(self._file, fieldnames=self._keys)
                self._writer.writeheader()
            elif set(result) != set(self._keys):
                raise ValueError(f"CSVLogger: row keys {sorted(result)} differ from the header {sorted(self._keys)}; "
                                 "log the same keys every time")
            self._writer.writerow(dict(result))

    def flush(self) -> None:
        """Flush written rows to disk."""
        with self._lock:
            self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        with self._lock:
            if not self._file.closed:
                self._file.close()
