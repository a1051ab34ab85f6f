"""A fake cluster implementing the status-client interface (``StatusClient``):
``status()`` / ``actor_log()`` for the monitor's tests."""

from __future__ import annotations

import copy
import threading
import time

T0 = 1_790_000_000.0


def sample_status() -> dict:
    """Two workers, two clients, three actors (one dead with a cause, one alive with a remote error)."""
    tb = ('Traceback (most recent call last):\n  File "/home/u/train.py", line 12, in divide\n'
          '    return 1 / 0\nZeroDivisionError: division by zero\n')
    return {
        "master": {"address": "127.0.0.1:8010", "version": "3.0.0", "pid": 123, "started_at": T0},
        "cpus": {"total": 6, "used": 2, "vacant": 4},
        "workers": [
            {"id": "w-aaa", "host": "127.0.0.1", "pid": 124, "cpus_total": 4, "cpus_used": 2,
             "memory_total_mb": 24000.0, "memory_used_mb": 1200.0, "load_avg": [0.5, 0.4, 0.3],
             "last_seen_s_ago": 0.4},
            {"id": "w-bbb", "host": "10.0.0.7", "pid": 555, "cpus_total": 2, "cpus_used": 0,
             "memory_total_mb": 8000.0, "memory_used_mb": 2000.0, "load_avg": [1.25, 1.0, 0.75],
             "last_seen_s_ago": 1.5},
        ],
        "clients": [
            {"id": "c-111", "host": "127.0.0.1", "pid": 200, "script": "/home/u/train.py", "started_at": T0 + 10,
             "actors": ["a-1", "a-2"]},
            {"id": "c-222", "host": "10.0.0.9", "pid": 201, "script": "/home/v/eval.py", "started_at": T0 + 20,
             "actors": ["a-3"]},
        ],
        "actors": [
            {"id": "a-1", "class_name": "Actor", "client_id": "c-111", "worker_id": "w-aaa", "host": "127.0.0.1",
             "pid": 300, "state": "alive", "created_at": T0 + 11, "ended_at": None, "death_cause": None,
             "last_error": None},
            {"id": "a-2", "class_name": "Divider", "client_id": "c-111", "worker_id": "w-aaa", "host": "127.0.0.1",
             "pid": 301, "state": "alive", "created_at": T0 + 12, "ended_at": None, "death_cause": None,
             "last_error": {"type": "ZeroDivisionError", "message": "division by zero", "traceback": tb,
                            "time": T0 + 30}},
            {"id": "a-3", "class_name": "Evaluator", "client_id": "c-222", "worker_id": "w-bbb", "host": "10.0.0.7",
             "pid": 302, "state": "dead", "created_at": T0 + 21, "ended_at": T0 + 40,
             "death_cause": "killed by signal 9", "last_error": None},
        ],
    }


class UnknownActorError(KeyError):
    """What a status client raises for an unknown actor id (a KeyError-like error)."""


class FakeCluster:
    """In-memory cluster: ``snapshot`` is what ``status()`` returns (a copy); ``logs`` maps actor id -> bytes."""

    def __init__(self, snapshot: dict | None = None, logs: dict[str, bytes] | None = None) -> None:
        self.snapshot = snapshot if snapshot is not None else sample_status()
        self.logs = logs if logs is not None else {
            "a-1": b"step 1\nstep 2\n",
            "a-2": "héllo wörld\n".encode() * 3,
            "a-3": b"evaluating\nKilled\n",
        }
        self.status_calls = 0
        self.log_calls: list[tuple[str, int, int]] = []
        self.fail: Exception | None = None
        self.closed = False
        self._lock = threading.Lock()

    def status(self) -> dict:
        with self._lock:
            self.status_calls += 1
            if self.fail is not None:
                raise self.fail
            return copy.deepcopy(self.snapshot)

    def actor_log(self, actor_id: str, offset: int = 0, max_bytes: int = 65536) -> tuple[bytes, int]:
        with self._lock:
            self.log_calls.append((actor_id, offset, max_bytes))
            if actor_id not in self.logs:
                raise UnknownActorError(actor_id)
            log = self.logs[actor_id]
            if offset < 0:  # as parl_remote's worker: the last -offset bytes
                offset = max(0, len(log) + offset)
            data = log[offset:offset + max_bytes]
            return data, offset + len(data)

    def append_log(self, actor_id: str, data: bytes) -> None:
        with self._lock:
            self.logs[actor_id] = self.logs.get(actor_id, b"") + data

    def kill_actor(self, actor_id: str, cause: str = "killed by signal 9") -> None:
        """Mark an actor dead and give its CPU back, as the master would after a kill."""
        with self._lock:
            for actor in self.snapshot["actors"]:
                if actor["id"] == actor_id and actor["state"] == "alive":
                    actor.update(state="dead", ended_at=time.time(), death_cause=cause)
                    for worker in self.snapshot["workers"]:
                        if worker["id"] == actor["worker_id"]:
                            worker["cpus_used"] -= 1
                    self.snapshot["cpus"]["used"] -= 1
                    self.snapshot["cpus"]["vacant"] += 1

    def close(self) -> None:
        self.closed = True
