"""Contract B: ClusterClient.status() keys and actor_log() against a real cluster."""

from __future__ import annotations

import json

import pytest
from conftest import wait_until

import parl_remote as xparl

pytestmark = pytest.mark.timeout(60)

STATUS_KEYS = {"master", "cpus", "gpus", "workers", "clients", "actors", "counts", "counters", "process"}
COUNTS_KEYS = {"workers_unreachable", "messages_received"}
COUNTERS_KEYS = {"actor_grants", "actor_refusals", "actor_deaths", "heartbeats_missed", "workers_joined",
                 "workers_lost", "worker_registrations_refused", "grant_latency_s"}  # fmt: skip
PROCESS_KEYS = {"cpu_seconds", "resident_memory_bytes", "open_fds", "open_sockets", "time"}
MASTER_KEYS = {"address", "version", "pid", "started_at"}
CPU_KEYS = {"total", "used", "vacant"}
WORKER_KEYS = {"id", "host", "pid", "cpus_total", "cpus_used", "gpus", "gpus_used", "gpu_only", "memory_total_mb",
               "memory_used_mb", "load_avg", "last_seen_s_ago"}  # fmt: skip
CLIENT_KEYS = {"id", "host", "pid", "script", "started_at", "actors"}
ACTOR_KEYS = {"id", "class_name", "client_id", "worker_id", "host", "pid", "state", "created_at", "ended_at",
              "death_cause", "last_error", "gpus"}  # fmt: skip


@xparl.remote_class
class Chatty:
    def say(self, text):
        print(text)
        return text

    def fail(self):
        raise ZeroDivisionError("division by zero")


def test_status_has_exactly_the_contract_keys(connected, status_client):
    actor = Chatty()
    actor.say("hello")
    with pytest.raises(ZeroDivisionError):
        actor.fail()
    status = status_client.status()
    json.dumps(status)  # JSON-serialisable
    assert set(status) == STATUS_KEYS
    assert MASTER_KEYS <= set(status["master"])  # plus "monitor_port", "gpu_cluster"
    assert set(status["master"]) - MASTER_KEYS <= {"monitor_port", "gpu_cluster"}
    assert set(status["cpus"]) == CPU_KEYS
    assert set(status["gpus"]) == CPU_KEYS
    assert set(status["counts"]) == COUNTS_KEYS and set(status["counters"]) == COUNTERS_KEYS
    assert set(status["process"]) == PROCESS_KEYS and status["process"]["resident_memory_bytes"] > 0
    assert status["counters"]["actor_grants"] >= 1 and status["counters"]["grant_latency_s"]["count"] >= 1
    assert status["counters"]["grant_latency_s"]["buckets"][-1] == ["+Inf", status["counters"]["grant_latency_s"][
        "count"]]
    assert status["cpus"]["total"] == 3 and status["cpus"]["used"] == 1 and status["cpus"]["vacant"] == 2
    (worker,) = status["workers"]
    assert set(worker) == WORKER_KEYS
    assert worker["cpus_total"] == 3 and worker["cpus_used"] == 1 and worker["memory_total_mb"] > 0
    assert len(worker["load_avg"]) == 3
    (client,) = [c for c in status["clients"] if c["id"] == connected.client_id]
    assert set(client) == CLIENT_KEYS
    actor_id = actor._xparl_actor.actor_id
    assert client["actors"] == [actor_id]
    (record,) = [a for a in status["actors"] if a["id"] == actor_id]
    assert set(record) == ACTOR_KEYS
    assert record["class_name"] == "Chatty" and record["state"] == "alive" and record["pid"] == actor._xparl_actor.pid
    wait_until(lambda: _record(status_client, actor_id)["last_error"], message="last_error reported")
    error = _record(status_client, actor_id)["last_error"]
    assert error["type"] == "builtins.ZeroDivisionError" and error["message"] == "division by zero"
    assert "Traceback" in error["traceback"] and error["time"] > 0
    # deleted actors stay listed, with their cause
    del actor
    dead = wait_until(lambda: _record(status_client, actor_id)["state"] == "dead" and _record(status_client, actor_id))
    assert dead["death_cause"] == "deleted by its client" and dead["ended_at"] >= dead["created_at"]


def _record(status_client, actor_id):
    return next(a for a in status_client.status()["actors"] if a["id"] == actor_id)


def test_actor_log_follows_and_survives_the_actor(connected, status_client):
    actor = Chatty()
    actor_id = actor._xparl_actor.actor_id
    actor.say("first line")
    data, offset = wait_until(lambda: (r := status_client.actor_log(actor_id)) and r[0] and r, message="log data")
    assert b"first line" in data and offset == len(data)
    actor.say("second line")
    more, offset2 = wait_until(lambda: (r := status_client.actor_log(actor_id, offset)) and r[0] and r)
    assert more.startswith(b"second line") and offset2 == offset + len(more)
    part, next_offset = status_client.actor_log(actor_id, 0, max_bytes=5)
    assert part == b"first" and next_offset == 5
    tail, end = status_client.actor_log(actor_id, -5)  # negative offset: the last 5 bytes
    assert tail == b"line\n" and end == offset2
    whole, end = status_client.actor_log(actor_id, -10**9)  # more than the log: from the start
    assert whole.startswith(b"first line") and end == offset2
    del actor
    wait_until(lambda: _record(status_client, actor_id)["state"] == "dead")
    data, _ = status_client.actor_log(actor_id)
    assert b"first line" in data and b"second line" in data


def test_unknown_actor_log(status_client):
    with pytest.raises(xparl.UnknownActorError) as info:
        status_client.actor_log("a-doesnotexist")
    assert isinstance(info.value, KeyError) and isinstance(info.value, xparl.RemoteError)
