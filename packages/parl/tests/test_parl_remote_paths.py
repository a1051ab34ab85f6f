"""PARL 2.x's import paths of the remote runtime (``parl.remote.client``, ``.exceptions``, ``.remote_decorator``)
give ``parl_remote``'s objects, and ``except parl.remote.exceptions.X`` catches what this runtime raises."""

import subprocess
import sys
import threading

import pytest

import parl
import parl_remote
import parl_remote.errors as errors
from parl.remote import exceptions
from parl.remote.client import get_global_client
from parl.remote.remote_decorator import remote_class


@remote_class
class Box:
    def __init__(self):
        self.value = 1

    def fail(self):
        raise KeyError("boom")

    def put(self, thing):
        return thing


@pytest.fixture(scope="module")
def cluster():
    parl.connect(cpu_num=2)  # an embedded local cluster
    yield get_global_client()
    parl.disconnect()


def test_paths_are_parl_remote_objects():
    assert remote_class is parl.remote_class is parl_remote.remote_class
    assert get_global_client is parl_remote.get_global_client and parl.remote.connect is parl_remote.connect
    assert exceptions.RemoteError is errors.RemoteError and exceptions.ResourceError is errors.ResourceError
    assert exceptions.RemoteSerializeError is exceptions.RemoteDeserializeError is errors.SerializationError
    assert exceptions.FutureObjectEmpty is errors.FutureObjectEmpty
    assert exceptions.RemoteAttributeError is errors.RemoteAttributeError
    assert issubclass(exceptions.FutureGetRepeatedlyError, errors.RemoteError)


def test_global_client_is_none_before_connect():
    code = "import parl.remote.client as c; print(c.GLOBAL_CLIENT)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"


def test_parl_exceptions_catch_what_the_runtime_raises(cluster):
    box = Box()
    with pytest.raises(exceptions.RemoteAttributeError, match="no attribute 'missing'") as info:
        box.missing  # noqa: B018 - a remote attribute read
    assert isinstance(info.value, AttributeError) and isinstance(info.value, exceptions.RemoteError)
    assert "Remote traceback" in str(info.value)
    with pytest.raises(exceptions.RemoteError) as info:
        box.fail()
    assert isinstance(info.value, KeyError)
    with pytest.raises(exceptions.RemoteSerializeError):
        box.put(threading.Lock())
    assert box.value == 1  # the actor lives on


def test_actor_num_counts_live_actors(cluster):
    from parl.remote.client import GLOBAL_CLIENT

    assert GLOBAL_CLIENT is cluster
    before = cluster.actor_num
    box = Box()
    assert box.value == 1 and cluster.actor_num == before + 1
    box.destroy()
    assert cluster.actor_num == before
