"""The master's counters (``parl_remote.server.counters``): death causes as the worker and master word them, the
grant-latency histogram, the refusal kinds, the process figures, and an ``ACQUIRE_JOB``'s ``waited_s`` checked."""

from __future__ import annotations

import pytest

from parl_remote.server.counters import (
    DEATH_KINDS,
    GRANT_LATENCY_BUCKETS_S,
    Counters,
    death_kind,
    process_figures,
    waited_s,
)
from parl_remote.server.exits import EXIT_CLIENT_GONE, EXIT_DELETED, EXIT_WORKER_GONE, describe_exit, max_memory_cause
from parl_remote.server.scheduling import _acquire_problem


@pytest.mark.parametrize(("cause", "kind"), [
    (describe_exit(EXIT_DELETED), "deleted"),
    (describe_exit(EXIT_CLIENT_GONE), "client_gone"),
    ("its client c-1 was lost (no heartbeat for 60 s)", "client_gone"),
    ("its client disconnected", "client_gone"),
    (describe_exit(EXIT_WORKER_GONE), "worker_lost"),
    ("the network link to its worker w-1 on h was lost: no heartbeat for more than LINK_GRACE_S=60 s", "worker_lost"),
    (max_memory_cause(100, 250, 50), "max_memory"),
    (describe_exit(-9), "killed"),
    (describe_exit(7), "exited"),
    ("the job had ended while idle, before it was assigned", "exited"),
    ("something new", "other"),
    (None, "other"),
])
def test_death_kinds(cause, kind):
    assert death_kind(cause) == kind and kind in DEATH_KINDS


def test_grant_latency_histogram_is_cumulative_with_le_bounds():
    counters = Counters()
    for waited in (0.0, GRANT_LATENCY_BUCKETS_S[0], 0.3, 1000.0):
        counters.granted(waited)
    latency = counters.snapshot()["grant_latency_s"]
    buckets = dict((str(b), n) for b, n in latency["buckets"])
    assert buckets[str(GRANT_LATENCY_BUCKETS_S[0])] == 2  # le: a value on a bound is in that bucket
    assert buckets["0.25"] == 2 and buckets["0.5"] == 3 and buckets["60.0"] == 3 and buckets["+Inf"] == 4
    assert latency["count"] == 4 and latency["sum"] == pytest.approx(1000.305)
    assert counters.snapshot()["actor_grants"] == 4


def test_refusals_and_deaths_by_kind():
    counters = Counters()
    counters.refused("cpu")
    counters.refused("gpu")
    counters.refused("something else")  # counted, never a new label
    assert counters.died(describe_exit(-9)) == "killed"
    snap = counters.snapshot()
    assert snap["actor_refusals"] == {"cpu": 1, "gpu": 1, "gpu_never": 0, "cpu_on_gpu_cluster": 0, "bad_request": 1}
    assert snap["actor_deaths"]["killed"] == 1 and sum(snap["actor_deaths"].values()) == 1


def test_waited_s_of_a_request():
    assert waited_s({}) == 0.0 and waited_s({"waited_s": 1.5}) == 1.5
    assert waited_s({"waited_s": float("nan")}) == 0.0 and waited_s({"waited_s": "x"}) == 0.0
    body = {"client_id": "c-1"}
    assert _acquire_problem({**body, "waited_s": 0.2}) is None
    for bad in (-1, "1", float("nan"), None, True):
        problem = _acquire_problem({**body, "waited_s": bad})
        assert problem is not None and "waited_s" in problem, bad


def test_process_figures():
    figures = process_figures()
    assert figures["cpu_seconds"] > 0 and figures["resident_memory_bytes"] > 1_000_000
    assert figures["open_fds"] >= 3 and 0 <= figures["open_sockets"] <= figures["open_fds"]


def test_open_fds_and_sockets_are_recounted_after_the_reuse_window():
    import socket

    before = process_figures(recount_s=0)
    extra = [socket.socket() for _ in range(3)]
    try:
        reused = process_figures(recount_s=3600)  # the counts of a moment ago
        assert (reused["open_fds"], reused["open_sockets"]) == (before["open_fds"], before["open_sockets"])
        fresh = process_figures(recount_s=0)
        assert (fresh["open_fds"], fresh["open_sockets"]) == (before["open_fds"] + 3, before["open_sockets"] + 3)
    finally:
        for sock in extra:
            sock.close()
