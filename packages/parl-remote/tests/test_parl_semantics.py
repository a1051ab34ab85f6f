"""PARL's remote semantics (issue #14): ``destroy()`` in blocking and in future mode, and the log URL that
``connect`` prints."""

from __future__ import annotations

import pytest
from conftest import wait_until

import parl_remote as xparl


@xparl.remote_class
class Blocking:
    def ping(self):
        return "pong"


@xparl.remote_class(wait=False)
class Future:
    def ping(self):
        return "pong"


@xparl.remote_class
class OwnDestroy:
    def destroy(self):
        return "the class's own destroy"


@pytest.mark.parametrize("cls, result", [(Blocking, lambda r: r), (Future, lambda r: r.get())])
def test_destroy_ends_the_remote_object_and_frees_its_cpu(connected, status_client, cls, result):
    used = status_client.status()["cpus"]["used"]
    obj = cls()
    assert result(obj.ping()) == "pong"
    assert status_client.status()["cpus"]["used"] == used + 1
    obj.destroy()
    obj.destroy()  # idempotent
    wait_until(lambda: status_client.status()["cpus"]["used"] == used, message="the CPU to return")
    with pytest.raises(xparl.RemoteError, match="deleted"):
        result(obj.ping())


def test_a_class_with_its_own_destroy_keeps_it(connected):
    obj = OwnDestroy()
    assert obj.destroy() == "the class's own destroy"


def test_connect_prints_the_monitor_page_of_this_clients_actor_logs(xparl_home, capfd):
    import os

    from parl_remote.cluster import LocalCluster

    cluster = LocalCluster(cpu_num=1, monitor_port=18110, parent_pid=os.getpid())
    cluster.start()
    try:
        client = xparl.connect(cluster.address, token=cluster.token)
        err = capfd.readouterr().err
        assert f"http://127.0.0.1:18110/clients/{client.client_id}" in err  # as PARL prints its log URL
        xparl.disconnect()
    finally:
        cluster.stop()
