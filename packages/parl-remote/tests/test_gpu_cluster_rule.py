"""``xparl start --gpu_cluster`` follows PARL's rule: the local worker runs one job per GPU and ignores
``--cpu_num`` (PARL 2.2.1's ``scripts.py`` sets the CPU count to 0 in a GPU cluster), and a GPU cluster's workers
take GPU actors only (PARL's master refuses CPU jobs in a GPU cluster); ``xparl connect --gpu`` to it adds a worker by
the same rule, ``xparl connect`` without GPUs a CPU worker. Fake GPU ids, as in
``test_gpus.py``: ``--gpu 0,1`` is accepted on a machine without GPUs, with a warning."""

from __future__ import annotations

import os
import socket

import pytest
from click.testing import CliRunner
from conftest import wait_until

import parl_remote as xparl
from parl_remote import ClusterClient, ResourceError, gpus
from parl_remote.cli import main
from parl_remote.server.registry import WorkerInfo
from parl_remote.server.scheduling import VacancyIndex

pytestmark = pytest.mark.timeout(120)


@xparl.remote_class(n_gpu=1)
class OneGpu:
    def visible(self):
        return os.environ.get("CUDA_VISIBLE_DEVICES")


@xparl.remote_class
class OnCpu:
    def pid(self):
        return os.getpid()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_job_slots_rule():
    assert gpus.local_job_slots(1, ["0", "1"], gpu_cluster=True)[0] == 2
    slots, note = gpus.local_job_slots(None, ["0", "1", "2"], gpu_cluster=True)
    assert (slots, note) == (3, None)
    assert "--cpu_num 1 is ignored with --gpu_cluster" in gpus.local_job_slots(1, ["0", "1"], True)[1]
    # mixed clusters (no flag) and GPU clusters without GPUs keep --cpu-num
    assert gpus.local_job_slots(1, ["0", "1"], gpu_cluster=False) == (1, None)
    assert gpus.local_job_slots(4, [], gpu_cluster=True) == (4, None)
    assert gpus.local_job_slots(None, [], gpu_cluster=False) == (None, None)


def test_gpu_cluster_runs_one_actor_per_gpu_whatever_cpu_num(xparl_home, monkeypatch):
    monkeypatch.setattr(gpus, "_nvml_count", lambda: None)  # the fake ids, also on a machine with GPUs
    runner = CliRunner()
    port = _free_port()
    result = runner.invoke(main, ["start", "--port", str(port), "--gpu_cluster", "--gpu", "0,1", "--cpu_num", "1",
                                  "--no-monitor"])  # fmt: skip
    try:
        assert result.exit_code == 0, result.output
        assert "--cpu_num 1 is ignored with --gpu_cluster" in result.stderr
        address = f"127.0.0.1:{port}"
        token = (xparl_home / "clusters" / str(port) / "token").read_text().strip()
        status = ClusterClient(address, token=token, timeout_s=3.0)
        try:
            wait_until(lambda: status.status()["cpus"]["total"] == 2, 20.0, message="two job slots")
            xparl.connect(address, token=token)
            a, b = OneGpu(), OneGpu()  # with one job slot per CPU the second would wait for a slot
            assert sorted([a.visible(), b.visible()]) == ["0", "1"]
            assert status.status()["gpus"] == {"total": 2, "used": 2, "vacant": 0}
            st = status.status()
            assert st["master"]["gpu_cluster"] is True
            assert [w["gpu_only"] for w in st["workers"]] == [True]
            # a CPU actor is refused at once, with the fix named (PARL: "not allowed to request CPU resource from a
            # GPU cluster"), and takes nothing
            with pytest.raises(ResourceError, match=r"GPU actors only.*n_gpu=1.*xparl connect"):
                OnCpu()
            assert status.status()["cpus"]["used"] == 2
            # a GPU machine joining the GPU cluster: one job per GPU, GPU actors only, --cpu_num ignored
            joined = runner.invoke(main, ["connect", "--address", address, "--gpu", "2,3", "--cpu_num", "1"])
            assert joined.exit_code == 0, joined.output
            assert "--cpu_num 1 is ignored with --gpu_cluster" in joined.stderr
            wait_until(lambda: status.status()["cpus"]["total"] == 4, 20.0, message="the joined GPU worker's slots")
            c, d = OneGpu(), OneGpu()
            assert sorted([c.visible(), d.visible()]) == ["2", "3"]
            with pytest.raises(ResourceError, match="GPU actors only"):
                OnCpu()
            # CPUs may join a GPU cluster (without --gpu): CPU actors then run there
            joined = runner.invoke(main, ["connect", "--address", address, "--gpu", "", "--cpu_num", "1"])
            assert joined.exit_code == 0, joined.output
            wait_until(lambda: status.status()["cpus"]["total"] == 5, 20.0, message="the CPU worker's slot")
            assert OnCpu().pid() != os.getpid()
            gpu_only = {w["id"]: w["gpu_only"] for w in status.status()["workers"]}
            assert sorted(gpu_only.values()) == [False, True, True]
        finally:
            xparl.disconnect()
            status.close()
    finally:
        runner.invoke(main, ["stop", "--port", str(port)])


def test_vacancy_index_never_gives_a_gpu_only_worker_to_a_cpu_actor():
    index = VacancyIndex()
    gpu_only = WorkerInfo("w-gpu", b"g", "h", 1, 2, vacant={"j1": {}, "j2": {}}, gpus=["0", "1"], gpu_only=True)
    index.update(gpu_only)
    assert index.pick(0) is None  # only a GPU-only worker has vacant jobs
    assert index.pick(1) is gpu_only
    mixed = WorkerInfo("w-mixed", b"m", "h", 2, 1, vacant={"j3": {}}, gpus=["0"])
    index.update(mixed)
    assert index.pick(0) is mixed
    assert index.pick(2) is gpu_only
