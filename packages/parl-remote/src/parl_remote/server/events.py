"""The cluster's event log: one JSON object per line for each event of the cluster, written by the master to a file
in the cluster's log folder (``events-<port>.jsonl`` beside ``master-<port>.log``), rotated by size.

A line: ``{"time": <unix s>, "seq": <n>, "master_pid": <pid>, "event": "<kind>", ...fields}``; ``seq`` counts from
1 in each master run (with ``master_pid`` it orders the events of one run; ``time`` orders runs). Kinds and their
fields (``EVENT_KINDS``):

- ``master_started``: ``address``, ``restarted`` (true when the log already held a run of this cluster);
- ``master_stopped``: ``address``;
- ``worker_joined``: ``worker_id``, ``host``, ``pid``, ``cpus``, ``gpus``, ``rejoined`` (a known worker registering
  again: after a network cut or a master restart), ``actors`` (the actors it came back with);
- ``worker_refused``: ``reason``;
- ``worker_unreachable``: ``worker_id``, ``host``, ``reason``, ``actors`` (its actors wait ``LINK_GRACE_S``);
- ``worker_lost``: ``worker_id``, ``host``, ``reason``;
- ``client_connected``: ``client_id``, ``host``, ``pid``, ``script``, ``reconnected``;
- ``client_gone``: ``client_id``, ``reason``;
- ``actor_granted``: ``actor_id``, ``class_name``, ``client_id``, ``worker_id``, ``host``, ``gpus``, ``waited_s``;
- ``actor_ended``: ``actor_id``, ``class_name``, ``client_id``, ``worker_id``, ``cause``, ``cause_kind`` (an end its
  client asked for: ``deleted``, ``client_gone``);
- ``actor_died``: the same fields, for every other end (``killed``, ``exited``, ``max_memory``, ``worker_lost``,
  ``other``; ``counters.DEATH_KINDS``).

Cost: one buffered write and flush per event (grants, ends, joins): never per heartbeat or metrics message.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import pathlib
import time

EVENT_KINDS = (
    "master_started", "master_stopped", "worker_joined", "worker_refused", "worker_unreachable", "worker_lost",
    "client_connected", "client_gone", "actor_granted", "actor_ended", "actor_died",
)  # fmt: skip
#: actor ends asked for by the actor's client (``actor_ended``); every other kind is an ``actor_died``
ASKED_ENDS = ("deleted", "client_gone")
#: the default size (bytes) at which the log rotates, and how many rotated files are kept (``events-P.jsonl.1``, ...)
MAX_BYTES = 10 * 1024 * 1024
BACKUPS = 3


def events_file(log_dir: pathlib.Path | str, tag: str | int) -> pathlib.Path:
    """The event log of the cluster whose master logs to ``log_dir`` as ``master-<tag>.log`` (tag: the master's
    port, or ``embedded-<pid>``)."""
    return pathlib.Path(log_dir) / f"events-{tag}.jsonl"


class EventLog:
    """Writes the events of one master run to ``path`` (appending), rotated at ``max_bytes`` with ``backups`` older
    files kept (``logging.handlers.RotatingFileHandler``).

    Args:
        path: the log file; its folder is created.
        max_bytes: size in bytes at which the file rotates (> 0).
        backups: rotated files kept (>= 1).

    Raises:
        ValueError: ``max_bytes`` or ``backups`` out of range.
        OSError: the file cannot be opened for appending.
    """

    def __init__(self, path: pathlib.Path | str, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        if int(max_bytes) <= 0 or int(backups) < 1:
            raise ValueError(f"the event log needs max_bytes > 0 and backups >= 1, got {max_bytes} and {backups}")
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.had_events = self.path.exists() and self.path.stat().st_size > 0
        self._handler = logging.handlers.RotatingFileHandler(self.path, maxBytes=int(max_bytes),
                                                             backupCount=int(backups), encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self.seq = 0
        self.pid = os.getpid()

    def write(self, event: str, **fields) -> None:
        """Appends one event (``event`` one of ``EVENT_KINDS``; ``fields`` JSON-serialisable, others as text). A
        failed write is reported on stderr by ``logging`` and the master goes on."""
        self.seq += 1
        line = json.dumps({"time": round(time.time(), 6), "seq": self.seq, "master_pid": self.pid, "event": event,
                           **fields}, default=str, separators=(",", ":"))
        record = logging.LogRecord("parl_remote.events", logging.INFO, __file__, 0, line, None, None)
        self._handler.handle(record)

    def close(self) -> None:
        self._handler.close()


def rotated_files(path: pathlib.Path | str) -> list[pathlib.Path]:
    """The event log ``path`` and its rotated files that exist, oldest first (``.3``, ``.2``, ``.1``, the log)."""
    path = pathlib.Path(path)
    rotated = [p for p in path.parent.glob(path.name + ".*") if p.suffix[1:].isdigit()]
    return [*sorted(rotated, key=lambda p: -int(p.suffix[1:])), *([path] if path.exists() else [])]


def _tail_lines(file: pathlib.Path, wanted: int | None, block: int = 65536) -> list[bytes]:
    """The last ``wanted`` complete lines of ``file`` (all when None), read from its end."""
    try:
        with open(file, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            if wanted is None:
                f.seek(0)
                return f.read().splitlines()
            data, pos = b"", end
            while pos > 0 and data.count(b"\n") <= wanted:
                step = min(block, pos)
                pos -= step
                f.seek(pos)
                data = f.read(step) + data
    except FileNotFoundError:  # rotated away meanwhile
        return []
    lines = data.splitlines()
    if pos > 0:
        lines = lines[1:]  # (cut at the block's start)
    return lines[-wanted:] if wanted else []


def parse_line(line: bytes | str) -> dict | None:
    """One event from a line of the log, or None for a line that is not a JSON object (a write cut by a crash)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def read_events(path: pathlib.Path | str, last: int | None = None) -> list[dict]:
    """The events in the log ``path`` and its rotated files, oldest first: the ``last`` ones when given (read from
    the files' ends, whatever their size). A line that is not JSON (a write cut by a crash) is skipped.

    Raises:
        FileNotFoundError: there is no event log at ``path``.
        ValueError: ``last`` is below 1.
    """
    if last is not None and last < 1:
        raise ValueError(f"last must be a number of events >= 1, got {last}")
    files = rotated_files(path)
    if not files:
        raise FileNotFoundError(f"no event log at {path}: the master writes it when started by `xparl start` or "
                                "`parl.connect()` (a master of an earlier version writes none)")
    events: list[dict] = []
    for file in reversed(files):  # newest first, until enough
        needed = None if last is None else last - len(events)
        lines_read = needed
        while True:  # (lines that are not JSON do not count: read more of the file's end for them)
            lines = _tail_lines(file, lines_read)
            found = [e for e in map(parse_line, lines) if e]
            if needed is None or len(found) >= needed or len(lines) < lines_read:
                break
            lines_read *= 2
        events[:0] = found[-needed:] if needed else found
        if last is not None and len(events) >= last:
            break
    return events[-last:] if last else events


def format_event(event: dict) -> str:
    """One event as a line for people: ``2026-01-02 03:04:05 UTC actor_died actor_id=a-.. cause_kind=killed ...``."""
    import datetime as _dt

    when = event.get("time")
    stamp = (_dt.datetime.fromtimestamp(float(when), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
             if isinstance(when, (int, float)) else "-")
    fields = " ".join(f"{k}={json.dumps(v) if isinstance(v, str) and (' ' in v or not v) else v}"
                      for k, v in event.items() if k not in ("time", "seq", "master_pid", "event"))
    return f"{stamp} {event.get('event', '?'):<18} {fields}".rstrip()
