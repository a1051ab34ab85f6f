"""A fork server for job processes: starting a job costs a ``fork`` (milliseconds), not an interpreter start.

The worker starts one zygote (``python -m parl_remote.server.zygote``) that imports the job's modules once and
creates no zmq context (so forking is safe). The worker writes JSON lines on the zygote's stdin::

    {"cmd": "spawn", "job_id": "j-...", "argv": [...]}   -> fork a job running parl_remote.server.job.main(argv)

and reads JSON lines from its stdout::

    {"event": "spawned", "job_id": "j-...", "pid": 123}
    {"event": "exit", "pid": 123, "returncode": -9}      (negative: killed by that signal, like Popen)

``XPARL_PRELOAD`` (comma-separated module names, e.g. ``torch,gymnasium``) names modules the zygote imports
before it forks any job, so that an actor whose class needs them starts without importing them again (torch
costs seconds of CPU per process). Modules are only imported, never initialised further (no threads, no
devices), so forking stays safe; one that fails to import is reported in the worker's job start-up log and
left to the jobs.

The zygote dies with its worker (``PR_SET_PDEATHSIG`` and end of stdin); its jobs die with it. It
sleeps until a request arrives or a job ends (``SIGCHLD``, delivered through ``signal.set_wakeup_fd``):
no periodic wake-ups that would take a core from busy actors.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import sys

from parl_remote.server import job


def _spawn(request: dict) -> int:
    pid = os.fork()
    if pid == 0:  # the job
        try:
            signal.set_wakeup_fd(-1)  # the zygote's SIGCHLD wiring is not the job's
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in _WAKE_FDS:
                os.close(fd)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(2, 1)  # stdout -> the worker's job start-up log, like stderr
            sys.stdin = open(os.devnull)  # noqa: SIM115
            sys.stdout = os.fdopen(1, "w", buffering=1)
            job.main(request["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
            os._exit(code)
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    return pid


_WAKE_FDS: list[int] = []


def _emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def preload(names: str) -> list[str]:
    """Imports the comma-separated modules of ``names`` (``XPARL_PRELOAD``); returns those imported.

    A module that cannot be imported is reported on stderr (the worker's job start-up log), not raised: the
    jobs that need it import it themselves, and report the error where the user sees it.
    """
    loaded = []
    for name in filter(None, (part.strip() for part in names.split(","))):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any import-time failure of a user module
            print(f"[xparl] XPARL_PRELOAD: cannot import {name!r} ({type(exc).__name__}: {exc}); "
                  "jobs import it themselves", file=sys.stderr)  # fmt: skip
        else:
            loaded.append(name)
    return loaded


def main() -> None:
    """Serves spawn requests until stdin closes."""
    job._set_parent_death_signal()
    preload(os.environ.get("XPARL_PRELOAD", ""))
    stdin = sys.stdin.fileno()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    _WAKE_FDS[:] = [wake_r, wake_w]
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # a handler, so the wake-up fd is written
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    buf = b""
    while True:
        ready, _, _ = select.select([stdin, wake_r], [], [])
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
        if stdin in ready:
            chunk = os.read(stdin, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                request = json.loads(line)
                if request.get("cmd") == "spawn":
                    _emit({"event": "spawned", "job_id": request["job_id"], "pid": _spawn(request)})
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            _emit({"event": "exit", "pid": pid, "returncode": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    main()
