"""A job's output capture: fd 1 and 2 go to the actor's log file ``<log dir>/<actor id>.log``; what Python
code prints is also queued for the client (``LOG`` notifications) unless the client turned it off. While a
method runs, an output thread forwards it every ``_OUTPUT_BATCH_S`` (training progress shows as it goes);
otherwise the main loop does, or the next reply carries it first.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from parl_remote.wire import serialization
from parl_remote.wire.protocol import MsgType

_OUTPUT_BATCH_S = 0.05  # while a method runs, its output reaches the client this often at most (one message)


class _Tee:
    """A text stream writing to the actor's log file and queueing text for the client.

    Text queued when the queue was empty calls ``wake`` (``Job._wake``): while a method runs, the output
    thread forwards it within ``_OUTPUT_BATCH_S``; otherwise the main loop does (or the next reply).
    """

    def __init__(self, log_file: Any, stream: str, pending: list | None, wake: Any = None) -> None:
        self._file = log_file
        self._stream = stream
        self._pending = pending
        self._wake = wake

    def write(self, text: str) -> int:
        self._file.write(text)
        pending = self._pending
        if pending is not None and text:
            was_empty = not pending
            pending.append((self._stream, text))
            if was_empty and self._wake is not None:
                self._wake()
        return len(text)

    def flush(self) -> None:
        self._file.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._file.fileno()

    @property
    def encoding(self) -> str:
        return "utf-8"


class OutputCapture:
    """The output half of ``Job`` (a mixin: it uses the job's ``io_lock``, ``in_user_code``, ``pending_output``,
    ``client`` / ``client_stream``, ``route`` and ``_send``)."""

    def _wake(self) -> None:
        """Output was queued: have it forwarded soon (``_Tee``)."""
        if self.in_user_code:
            self.output_ready.set()
            return
        if threading.get_ident() == self.main_ident:
            return  # the main loop's own output: forwarded with the next reply or idle turn
        try:
            os.write(self.wake_w, b"x")
        except OSError:  # full: a wake-up is pending anyway
            pass

    def _output_loop(self) -> None:
        """The output thread: forwards what a running method prints (e.g. training progress) while it runs,
        not only with its reply."""
        while True:
            self.output_ready.wait()
            self.output_ready.clear()
            time.sleep(_OUTPUT_BATCH_S)  # one message for a burst of prints
            with self.io_lock:
                if self.in_user_code:
                    self._flush_output(background=True)

    def _leave_user_code(self) -> None:
        with self.io_lock:  # waits for a forwarding in progress: the sockets are the main thread's again
            self.in_user_code = False

    def _open_log(self, forward: bool) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        path = os.path.join(self.log_dir, f"{self.actor_id}.log")
        log_file = open(path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log_file.fileno(), 1)
        os.dup2(log_file.fileno(), 2)
        self.pending_output = [] if forward else None
        sys.stdout = _Tee(log_file, "stdout", self.pending_output, self._wake)
        sys.stderr = _Tee(log_file, "stderr", self.pending_output, self._wake)
        if forward:
            threading.Thread(target=self._output_loop, name="xparl-output", daemon=True).start()

    def _flush_output(self, background: bool = False) -> None:
        pending = self.pending_output
        if not pending or (self.client is None and self.client_stream is None):
            return
        items = pending[:]
        del pending[: len(items)]
        route = self.client_stream or self.route(self.client)
        self._send(MsgType.LOG, 0, serialization.dumps(items), route, notification=True, background=background)
