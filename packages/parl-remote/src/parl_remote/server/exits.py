"""The exit codes of a job process, and how the worker (or the Ray engine's actor) describes an end."""

from __future__ import annotations

import signal

EXIT_DELETED = 0  # its client deleted the actor
EXIT_CLIENT_GONE = 3  # its client disconnected
EXIT_WORKER_GONE = 4  # its worker process ended
EXIT_NOT_STARTED = 1  # started by another process than the worker it names (``job.main``)


def describe_exit(returncode: int) -> str:
    """A human description of a process's exit status (``-9`` -> ``"killed by signal 9 (SIGKILL)"``)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {-returncode} ({name})"
    if returncode == EXIT_DELETED:
        return "deleted by its client"
    if returncode == EXIT_CLIENT_GONE:
        return "its connection to its client closed (the client ended, or the network link between them was lost)"
    if returncode == EXIT_WORKER_GONE:
        return "its worker process ended"
    return f"exited with code {returncode}"


def max_memory_cause(max_memory_mb: float, rss_mb: float, base_rss_mb: float) -> str:
    """Why an actor was ended for growing past ``max_memory`` (MB, above ``base_rss_mb``: PARL's rule)."""
    return (
        f"exceeded max_memory={max_memory_mb:g} MB (resident memory {rss_mb:.0f} MB, "
        f"{rss_mb - base_rss_mb:.0f} MB more than when the actor started); "
        "raise max_memory in @remote_class or use less memory"
    )
