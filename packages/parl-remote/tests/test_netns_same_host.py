"""Same-host detection needs proof, not the hostname: a client in another network namespace of this machine (same
hostname, same boot id, same /dev/shm, but other abstract Unix sockets) falls back to TCP and works. The test
creates a network namespace joined to this one by a veth pair, and deletes it (skipped where that is forbidden)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import wait_until

from parl_remote import ClusterClient
from parl_remote.cluster import LocalCluster
from parl_remote.wire import shm

pytestmark = pytest.mark.timeout(120)

CLIENT = r"""
import os, sys
import numpy as np
import parl_remote as xparl
from parl_remote.transport.zmq_peer import ZmqPeer

@xparl.remote_class
class Echo:
    def echo(self, x):
        return x

xparl.connect(sys.argv[1])
actor = Echo()
conn = actor._xparl_actor
array = np.arange(2**20, dtype=np.float32)  # 4 MiB: would take /dev/shm on the same host
assert np.array_equal(actor.echo(array), array)
assert isinstance(conn.conn, ZmqPeer) and conn.conn.sock.LAST_ENDPOINT.startswith(b"tcp://"), conn.conn
print("same_host", conn.same_host, "endpoint", conn.conn.sock.LAST_ENDPOINT.decode(), flush=True)
xparl.disconnect()
"""


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


@pytest.fixture
def netns():
    """A network namespace ``ns`` reaching this one's ``host_ip`` over a veth pair; deleted afterwards."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("needs root and iproute2 (`ip netns`) to create a network namespace")
    tag = os.getpid() % 10000
    ns, veth, peer = f"xparl-t{tag}", f"xv{tag}a", f"xv{tag}b"
    host_ip, ns_ip = f"10.231.{tag % 250}.1", f"10.231.{tag % 250}.2"
    made = _ip("netns", "add", ns)
    if made.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {made.stderr.strip()}")
    try:
        for args in (
            ("link", "add", veth, "type", "veth", "peer", "name", peer),
            ("link", "set", peer, "netns", ns),
            ("addr", "add", f"{host_ip}/30", "dev", veth),
            ("link", "set", veth, "up"),
            ("netns", "exec", ns, "ip", "addr", "add", f"{ns_ip}/30", "dev", peer),
            ("netns", "exec", ns, "ip", "link", "set", peer, "up"),
            ("netns", "exec", ns, "ip", "link", "set", "lo", "up"),
        ):
            done = _ip(*args)
            assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"
        yield ns, host_ip
    finally:
        _ip("link", "delete", veth)
        _ip("netns", "delete", ns)
        assert ns not in _ip("netns", "list").stdout


def test_client_in_another_network_namespace_falls_back_to_tcp(xparl_home, netns):
    ns, host_ip = netns
    cluster = LocalCluster(cpu_num=1, host=host_ip, parent_pid=os.getpid())
    cluster.start()
    try:
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["cpus"]["total"] == 1, timeout_s=20, message="the worker")
        done = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", CLIENT, cluster.address],
            capture_output=True, text=True, timeout=60, env={**os.environ, "XPARL_TOKEN": cluster.token},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        # the job shares this /dev/shm (same mount namespace), so buffers may take it; the calls go over TCP
        assert f"endpoint tcp://{host_ip}:" in done.stdout, done.stdout
    finally:
        cluster.stop()


def test_client_with_another_dev_shm_does_not_use_it(xparl_home):
    """Same network namespace, but a private /dev/shm (a private mount namespace, as in a container): the job
    cannot read the client's nonce file, so neither /dev/shm nor the abstract sockets are used; calls take TCP."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("needs unshare(1) and mount(8) (util-linux)")
    mount = "mount -t tmpfs -o size=64m tmpfs /dev/shm"
    for flags in (["-m"], ["-r", "-m"]):  # as root, else in a user namespace
        if subprocess.run(["unshare", *flags, "sh", "-c", mount], capture_output=True).returncode == 0:
            break
    else:
        pytest.skip("cannot make a private mount namespace here")
    cluster = LocalCluster(cpu_num=1, parent_pid=os.getpid())
    cluster.start()
    try:
        with ClusterClient(cluster.address, token=cluster.token, timeout_s=2.0) as client:
            wait_until(lambda: client.status()["cpus"]["total"] == 1, timeout_s=20, message="the worker")
        done = subprocess.run(
            ["unshare", *flags, "sh", "-c", f'{mount} && exec "$0" -c "$1" "$2"', sys.executable, CLIENT,
             cluster.address],
            capture_output=True, text=True, timeout=60, env={**os.environ, "XPARL_TOKEN": cluster.token},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "same_host False endpoint tcp://127.0.0.1:" in done.stdout, done.stdout
    finally:
        cluster.stop()


def test_dev_shm_proof():
    if not shm.available():
        pytest.skip("no writable /dev/shm on this machine")
    proof = shm.write_proof()
    name, nonce = proof
    try:
        assert shm.check_proof(proof) and shm.check_proof(list(proof))
        assert not shm.check_proof((name, nonce[::-1]))  # another nonce: another /dev/shm
        assert not shm.check_proof((name + "x", nonce)) and not shm.check_proof(None)
        assert not shm.check_proof(("../etc/passwd", nonce)) and not shm.check_proof(("xparl-1/../x", nonce))
    finally:
        shm.remove_proof(proof)
    assert not (shm.SHM_DIR / name).exists() and not shm.check_proof(proof)
