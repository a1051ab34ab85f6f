"""A killed worker's /dev/shm files (its jobs' arenas) are removed by the master's sweep, or by the next worker
that starts on the host (its first sweep), without waiting for another worker's periodic sweep (real processes on
loopback). SHM_SWEEP_S is an hour in these clusters, so no periodic sweep of theirs does it.

The sweep is host-wide (any cluster's master or worker removes the files of any ended process), so each scenario
runs in a process of its own with a private /dev/shm (a mount namespace, `unshare -m`): a cluster of another test
running at the same time cannot sweep the files first."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import start_cluster, wait_until

import parl_remote as xparl
from parl_remote import ClusterClient
from parl_remote.wire import shm

np = pytest.importorskip("numpy")

pytestmark = [
    pytest.mark.timeout(150),
    pytest.mark.skipif(not shm.available(), reason="no writable /dev/shm on this machine"),
]


@xparl.remote_class
class Holder:
    def pid(self):
        return os.getpid()

    def make(self, n):
        return np.ones(n, dtype=np.uint8)  # over SHM_MIN_BYTES: the reply goes through the job's /dev/shm arena


def _files_of(pids: list[int]) -> set[str]:
    return {p.name for pid in pids for p in shm.SHM_DIR.glob(f"xparl-{pid}-*")}


def _cluster_with_actors_holding_shm(n_actors: int = 2):
    """A cluster whose periodic sweeps are an hour apart, and actors whose jobs hold /dev/shm arena files."""
    os.environ["XPARL_SHM_SWEEP_S"] = "3600"
    cluster = start_cluster(cpu_num=n_actors)
    xparl.connect(cluster.address, token=cluster.token)
    actors = [Holder() for _ in range(n_actors)]
    pids = [a.pid() for a in actors]
    for actor in actors:
        assert int(actor.make(4 * 2**20).sum()) == 4 * 2**20
    assert {name.split("-")[1] for name in _files_of(pids)} == {str(p) for p in pids}  # every job holds a file
    return cluster, actors, pids


MOUNT = "mount -t tmpfs -o size=256m,mode=1777 xparl-test-shm /dev/shm"


def _run_with_a_private_dev_shm(scenario: str) -> None:
    """Runs ``scenario`` (a function of this module) in a child process whose /dev/shm is its own empty tmpfs."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(8) (util-linux) for a private /dev/shm")
    for flags in (["-m"], ["-r", "-m"]):  # as root, else in a user namespace
        if subprocess.run(["unshare", *flags, "sh", "-c", MOUNT], capture_output=True).returncode == 0:
            break
    else:
        pytest.skip("cannot make a private mount namespace here (unshare -m) for a private /dev/shm")
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import test_shm_cleanup as t; t.{scenario}(); print('scenario passed')")
    done = subprocess.run(["unshare", *flags, "sh", "-c", f'{MOUNT} && exec "$0" -c "$1"', sys.executable, code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "scenario passed" in done.stdout, done.stdout[-4000:] + done.stderr[-8000:]


def test_master_sweeps_a_killed_workers_shm_files(xparl_home):
    _run_with_a_private_dev_shm("master_sweeps_a_killed_workers_shm_files")


def test_next_worker_start_sweeps_a_killed_workers_shm_files(xparl_home):
    _run_with_a_private_dev_shm("next_worker_start_sweeps_a_killed_workers_shm_files")


def master_sweeps_a_killed_workers_shm_files():
    cluster, actors, pids = _cluster_with_actors_holding_shm()
    try:
        os.kill(cluster.worker.pid, signal.SIGKILL)
        cluster.worker.wait()
        wait_until(lambda: not any(_pid_alive(p) for p in pids), timeout_s=5, message="the jobs to die with it")
        assert _files_of(pids)  # nobody removed them at the kill
        # The master notices the lost worker after HEARTBEAT_LIVENESS intervals (1 s here) and sweeps then.
        wait_until(lambda: not _files_of(pids), timeout_s=8, message="the killed jobs' /dev/shm files to go")
    finally:
        xparl.disconnect()
        cluster.stop()


def next_worker_start_sweeps_a_killed_workers_shm_files():
    cluster, actors, pids = _cluster_with_actors_holding_shm()
    worker2 = None
    os.kill(cluster.master.pid, signal.SIGSTOP)  # the master cannot sweep: only the new worker can
    try:
        os.kill(cluster.worker.pid, signal.SIGKILL)
        cluster.worker.wait()
        wait_until(lambda: not any(_pid_alive(p) for p in pids), timeout_s=5, message="the jobs to die with it")
        assert _files_of(pids)
        worker2 = subprocess.Popen(
            [sys.executable, "-m", "parl_remote.server.worker", "--address", cluster.address, "--cpu-num", "1",
             "--host", "127.0.0.1"],
            env={**os.environ, "XPARL_TOKEN": cluster.token}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(lambda: not _files_of(pids), timeout_s=15, message="the new worker's start-up sweep")
        os.kill(cluster.master.pid, signal.SIGCONT)
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["cpus"]["total"] == 1, timeout_s=10, message="the new worker")
    finally:
        os.kill(cluster.master.pid, signal.SIGCONT)
        xparl.disconnect()
        if worker2 is not None:
            worker2.terminate()
            worker2.wait(10)
        cluster.stop()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
