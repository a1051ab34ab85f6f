"""Right after the pooled (idle) jobs of a worker are killed, a new actor gets a live job, never a dead one
(real processes on loopback). Before the fix, 3 of 11 tries failed with ActorDiedError."""

from __future__ import annotations

import os
import signal

import psutil
import pytest
from conftest import start_cluster, wait_until

import parl_remote as xparl
from parl_remote import ClusterClient

pytestmark = pytest.mark.timeout(120)

CPUS = 3
ROUNDS = 11


@xparl.remote_class
class Echo:
    def pid(self):
        return os.getpid()


def _job_pids(worker_pid: int) -> set[int]:
    """The job processes of a worker: the zygote's children (and any job the worker started itself)."""
    pids = set()
    for p in psutil.Process(worker_pid).children(recursive=True):
        try:
            if p.ppid() != worker_pid:  # the worker's only child is the zygote
                pids.add(p.pid)
        except psutil.NoSuchProcess:  # a job that ended while we looked
            pass
    return pids


def test_new_actors_never_get_a_killed_pooled_job(xparl_home):
    cluster = start_cluster(cpu_num=CPUS)
    try:
        xparl.connect(cluster.address, token=cluster.token)
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as status:
            for round_ in range(ROUNDS):
                wait_until(lambda: len(_job_pids(cluster.worker.pid)) == CPUS
                           and status.status()["cpus"]["used"] == 0,
                           timeout_s=20, message="a full pool of idle jobs")  # fmt: skip
                pooled = _job_pids(cluster.worker.pid)
                for pid in pooled:
                    os.kill(pid, signal.SIGKILL)
                actor = Echo()  # at once: the master may still list the killed jobs as idle
                pid = actor.pid()
                assert pid not in pooled and psutil.pid_exists(pid), f"round {round_}"
                actor.destroy()
    finally:
        xparl.disconnect()
        cluster.stop()
