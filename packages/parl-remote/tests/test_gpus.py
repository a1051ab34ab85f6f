"""GPU scheduling with real processes on loopback. The worker declares fake GPU ids (``--gpu 0,1`` is accepted
on a machine without GPUs, with a warning), so grants, exclusivity, freeing and ``CUDA_VISIBLE_DEVICES`` are
tested anywhere; the CUDA-marked test checks that a granted actor really sees its device where one exists."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from click.testing import CliRunner
from conftest import run_python, wait_until

import parl_remote as xparl
from parl_remote import ClusterClient, cli, config, gpus
from parl_remote.cluster import LocalCluster

pytestmark = pytest.mark.timeout(90)


@xparl.remote_class(n_gpu=1)
class OneGpu:
    def visible(self):
        return os.environ.get("CUDA_VISIBLE_DEVICES")

    def pid(self):
        return os.getpid()


@xparl.remote_class(n_gpu=2)
class TwoGpus(OneGpu._original):
    pass


@xparl.remote_class
class CpuOnly(OneGpu._original):
    pass


@xparl.remote_class(n_gpu=3)
class ThreeGpus(OneGpu._original):
    pass


@pytest.fixture(scope="module")
def gpu_cluster(xparl_home):
    """A cluster whose one worker has 3 CPUs (job slots) and the fake GPUs 0 and 1."""
    cluster = LocalCluster(cpu_num=3, gpus="0,1", parent_pid=os.getpid())
    cluster.start()
    status = ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0)
    try:
        wait_until(lambda: status.status()["gpus"]["total"] == 2 and status.status()["cpus"]["total"] == 3, 20.0,
                   message="the GPU worker to register")
    finally:
        status.close()
    yield cluster
    xparl.disconnect()
    cluster.stop()


@pytest.fixture
def on_gpus(gpu_cluster):
    xparl.connect(gpu_cluster.address, token=gpu_cluster.token)
    status = ClusterClient(gpu_cluster.address, token=gpu_cluster.token, timeout_s=3.0)
    yield status
    status.close()
    xparl.disconnect()


def _gpus_used(status):
    (worker,) = status.status()["workers"]
    return worker["gpus_used"]


def test_grants_are_exclusive_and_cpu_actors_share_the_worker_without_gpus(on_gpus):
    a, b = OneGpu(), OneGpu()
    cpu = CpuOnly()
    assert sorted([a.visible(), b.visible()]) == ["0", "1"]  # one distinct GPU each
    assert cpu.visible() == ""  # CPU actors on a GPU worker see no GPU (PARL's rule)
    status = on_gpus.status()
    assert status["gpus"] == {"total": 2, "used": 2, "vacant": 0} and status["cpus"]["used"] == 3
    assert _gpus_used(on_gpus) == ["0", "1"]
    records = {r["id"]: r for r in status["actors"] if r["state"] == "alive"}
    assert records[a._xparl_actor.actor_id]["gpus"] == [a.visible()]
    assert records[cpu._xparl_actor.actor_id]["gpus"] == []
    text = cli._status_line("here", on_gpus.status(summary=True))  # what xparl status prints
    assert "2 used GPUs, 0 vacant GPUs" in text and "GPUs used [0,1], free []" in text


def test_busy_gpus_wait_and_are_freed_when_the_actor_ends(on_gpus):
    a, b = OneGpu(), OneGpu()
    freed = a.visible()
    got = {}

    def create():
        try:
            got["actor"] = OneGpu()  # both GPUs are held: this waits (it does not fail) until one is freed
            got["visible"] = got["actor"].visible()
        except Exception as exc:  # noqa: BLE001 - reported by the assert below
            got["error"] = exc

    thread = threading.Thread(target=create)
    thread.start()
    wait_until(lambda: _gpus_used(on_gpus) == ["0", "1"], message="both GPUs held")
    assert thread.is_alive() and not got  # still waiting
    del a
    thread.join(timeout=30)
    assert not thread.is_alive() and "error" not in got, got
    assert got["visible"] == freed and b.visible() != freed


def test_gpus_are_freed_when_the_actor_process_is_killed(on_gpus):
    a = TwoGpus()
    assert a.visible() == "0,1"
    os.kill(a.pid(), signal.SIGKILL)
    wait_until(lambda: _gpus_used(on_gpus) == [], message="the dead actor's GPUs freed")
    b = TwoGpus()
    assert b.visible() == "0,1"


def test_a_request_no_worker_can_meet_fails_at_once(on_gpus):
    started = time.monotonic()
    with pytest.raises(xparl.ResourceError, match=r"n_gpu=3, but no worker .* has that many GPUs.*\[2\]"):
        ThreeGpus()
    assert time.monotonic() - started < config.get("RESOURCE_WAIT_S")  # not after the wait for busy resources


@pytest.mark.parametrize("n_gpu", [-1, 0.5, 1.0, True, "1"])
def test_bad_n_gpu_is_a_clear_error(n_gpu):
    with pytest.raises(ValueError, match="int >= 0"):
        xparl.remote_class(n_gpu=n_gpu)


def test_gpu_flags_on_machines_with_and_without_gpus(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpus, "_nvml_count", lambda: None)  # no NVML / no GPU
    ids, warning = gpus.resolve("0,1")
    assert ids == ["0", "1"] and "no GPU is visible" in warning
    assert gpus.resolve(None) == ([], None) and gpus.resolve("") == ([], None)
    with pytest.raises(ValueError, match="twice"):
        gpus.resolve("0,0")
    monkeypatch.setattr(gpus, "_nvml_count", lambda: 2)  # a machine with two GPUs
    assert gpus.resolve(None) == (["0", "1"], None)
    assert gpus.resolve("1") == (["1"], None)
    with pytest.raises(ValueError, match=r"id\(s\) 2 do not exist; this machine has 2 GPU\(s\), ids 0..1"):
        gpus.resolve("0,2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert gpus.detect() == ["3"]


def test_cli_rejects_bad_gpu_ids_before_starting_anything(monkeypatch):
    monkeypatch.setattr(gpus, "_nvml_count", lambda: 1)
    result = CliRunner().invoke(cli.main, ["connect", "--address", "127.0.0.1:1", "--gpu", "0,3", "--token", "t"])
    assert result.exit_code == 2 and "GPU id(s) 3 do not exist" in result.output
    result = CliRunner().invoke(cli.main, ["start", "--gpu_cluster", "--gpu", "0,,1"])
    assert result.exit_code == 2 and "separated by commas" in result.output


def _cuda_driver_devices() -> int:
    """GPUs the CUDA driver (libcuda, through ctypes: no torch needed) shows this process; 0 without a driver."""
    import ctypes

    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if libcuda.cuInit(0) != 0 or libcuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


PROBE = """
import ctypes, os


def cuda_devices():
    libcuda = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int(0)
    if libcuda.cuInit(0) != 0 or libcuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0, []
    uuids = []
    for i in range(count.value):
        device, uuid = ctypes.c_int(0), ctypes.create_string_buffer(16)
        libcuda.cuDeviceGet(ctypes.byref(device), i)
        libcuda.cuDeviceGetUuid(uuid, device)
        uuids.append(uuid.raw.hex())
    return count.value, uuids
"""


@pytest.mark.cuda
@pytest.mark.skipif(_cuda_driver_devices() == 0, reason="CUDA not available (no CUDA driver or no GPU)")
def test_granted_actors_see_exactly_their_real_devices(xparl_home):
    n_gpus = _cuda_driver_devices()
    n = min(2, n_gpus)
    code = PROBE + f"""
import parl_remote as xparl
from parl_remote.cluster import LocalCluster

@xparl.remote_class(n_gpu=1)
class Probe:
    def devices(self):
        return cuda_devices()

@xparl.remote_class
class CpuProbe(Probe._original):
    pass

cluster = LocalCluster(cpu_num=3, gpus="{','.join(map(str, range(n_gpus)))}", parent_pid=os.getpid())
cluster.start()
try:
    xparl.connect(cluster.address, token=cluster.token, distributed_files=[])
    probes = [Probe() for _ in range({n})]
    seen = [p.devices() for p in probes]
    print([c for c, _ in seen], len({{u[0] for _, u in seen}}), CpuProbe().devices()[0])
finally:
    xparl.disconnect()
    cluster.stop()
"""
    out = run_python(code, timeout_s=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == f"{[1] * n} {n} 0"  # one device each, all distinct; CPU: none
