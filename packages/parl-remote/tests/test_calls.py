"""Blocking actors: calls, attributes, exceptions, serialization errors, output forwarding."""

from __future__ import annotations

import os
import threading
import time

import pytest

import parl_remote as xparl

pytestmark = pytest.mark.timeout(60)


@xparl.remote_class
class Counter:
    """A test actor."""

    def __init__(self, start=0, step=1):
        self.count = start
        self.step = step

    def add(self, k=None):
        self.count += self.step if k is None else k
        return self.count

    def echo(self, *args, **kwargs):
        return args, kwargs

    def divide(self, a, b):
        return a / b

    def keep(self, array):
        self.kept = array  # a zero-copy view of the caller's shared-memory arena
        return array.nbytes

    def kept_range(self):
        return float(self.kept.min()), float(self.kept.max())

    def raise_custom(self):
        raise CustomError("bad", 7)

    def raise_unpicklable(self):
        raise UnpicklableError()

    def talk(self, text):
        print(text)
        return len(text)

    def return_lock(self):
        return threading.Lock()

    @property
    def doubled(self):
        return self.count * 2

    @staticmethod
    def static_add(a, b):
        return a + b


class CustomError(Exception):
    def __init__(self, message, code):
        super().__init__(message, code)
        self.code = code


class UnpicklableError(Exception):
    def __init__(self):
        super().__init__("cannot travel")
        self.lock = threading.Lock()


@xparl.remote_class
class BadInit:
    def __init__(self):
        raise ValueError("no good")


def test_calls_and_attributes(connected):
    counter = Counter(10, step=2)
    assert counter.add() == 12
    assert counter.add(5) == 17
    assert counter.count == 17
    assert counter.doubled == 34
    counter.count = 100
    assert counter.add(1) == 101
    counter.new_attr = [1, 2, 3]
    assert counter.new_attr == [1, 2, 3]
    assert counter.static_add(2, 3) == 5
    assert counter.echo(1, "a", key={"x": (1, 2)}) == ((1, "a"), {"key": {"x": (1, 2)}})
    assert Counter._original.__name__ == "Counter"
    assert "Counter" in repr(counter)


def test_large_numpy_roundtrip(connected):
    np = pytest.importorskip("numpy")
    counter = Counter()
    array = np.arange(3 * 2**20, dtype=np.float32).reshape(3, 2**20)
    import pathlib

    from parl_remote.wire import shm

    before = set(pathlib.Path("/dev/shm").glob("xparl-*")) if shm.available() else set()
    (back,), _ = counter.echo(array)
    assert back.dtype == np.float32 and back.shape == array.shape
    np.testing.assert_array_equal(back, array)
    assert counter._xparl_actor.same_host == shm.available()
    assert back.flags.writeable  # received arrays can be updated in place, as PARL code does
    back += 1
    np.testing.assert_array_equal(counter.echo(array)[0][0], array)  # the next message is not disturbed
    small = np.arange(10, dtype=np.int64)  # small arrays stay in-band
    np.testing.assert_array_equal(counter.echo(small)[0][0], small)
    if shm.available():  # the connection's arenas are unlinked when the actor is deleted
        del counter
        deadline = time.monotonic() + 10
        while set(pathlib.Path("/dev/shm").glob("xparl-*")) - before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(pathlib.Path("/dev/shm").glob("xparl-*")) <= before
        np.testing.assert_array_equal(back, array + 1)  # still readable (as updated) after the arena file is gone


@pytest.mark.parametrize("unix_stream", ["1", "0"])
def test_same_host_actor_moves_to_its_unix_stream_or_ipc_endpoint(connected, monkeypatch, unix_stream):
    import sys

    import zmq

    from parl_remote.wire import shm

    monkeypatch.setenv("XPARL_UNIX_STREAM", unix_stream)
    counter = Counter(5)
    actor = counter._xparl_actor
    same_host = sys.platform.startswith("linux") and shm.available()
    if same_host and unix_stream == "1":
        assert actor.stream is not None and not actor.stream.closed
        assert actor.sock.closed  # all traffic moved to the stream
    else:
        assert actor.stream is None
        endpoint = actor.sock.get(zmq.LAST_ENDPOINT).decode()
        assert endpoint.startswith("ipc://@xparl-" if same_host else "tcp://"), endpoint
    assert counter.add(2) == 7 and counter.count == 7  # calls and attributes work there
    counter.count = 1
    assert counter.add(1) == 2


def test_shared_memory_regions_are_reused_only_after_release(connected):
    np = pytest.importorskip("numpy")
    import pathlib

    from parl_remote.wire import shm

    counter = Counter()
    size = 2 * 2**20 // 8  # 2 MiB of float64: above SHM_MIN_BYTES
    assert counter.keep(np.full(size, 1.0)) == size * 8  # the actor keeps a view of our arena
    held = [counter.echo(np.full(size, float(i)))[0][0] for i in range(2, 8)]  # we keep what comes back
    for _ in range(20):  # results dropped at once: their regions are released and reused
        counter.echo(np.full(size, -1.0))
    assert counter.kept_range() == (1.0, 1.0)  # never overwritten by the later sends
    for i, back in enumerate(held, start=2):
        assert back.min() == back.max() == float(i)
    if shm.available():
        mine = list(pathlib.Path("/dev/shm").glob(f"xparl-{os.getpid()}-a*"))
        assert 1 <= len(mine) <= 2, mine  # 16 MiB arenas, reused: not one per call


def test_user_exception_is_remote_and_original_type(connected):
    counter = Counter(1)
    with pytest.raises(ZeroDivisionError) as info:
        counter.divide(1, 0)
    assert isinstance(info.value, xparl.RemoteError)
    assert "division by zero" in str(info.value)
    assert "in divide" in info.value.remote_traceback and "return a / b" in info.value.remote_traceback
    # the actor stays alive and keeps its state
    assert counter.add(1) == 2
    with pytest.raises(CustomError) as info:
        counter.raise_custom()
    assert isinstance(info.value, xparl.RemoteError) and info.value.code == 7
    with pytest.raises(xparl.RemoteError) as info:
        counter.raise_unpicklable()
    assert "UnpicklableError" in str(info.value) and "cannot travel" in str(info.value)
    with pytest.raises(AttributeError) as info:
        _ = counter.no_such_attribute
    assert isinstance(info.value, xparl.RemoteError)
    assert counter.add(1) == 3


def test_init_exception(connected, status_client):
    with pytest.raises(ValueError, match="no good") as info:
        BadInit()
    assert isinstance(info.value, xparl.RemoteError)


def test_unpicklable_argument_is_named_before_sending(connected):
    counter = Counter()
    with pytest.raises(xparl.SerializationError, match="argument 'fn'"):
        counter.echo(1, fn=threading.Lock())
    with pytest.raises(xparl.SerializationError, match="positional argument 0"):
        Counter(threading.Lock())
    with pytest.raises(xparl.SerializationError, match=r"the return value of Counter\.return_lock\(\) back \(lock\)"):
        counter.return_lock()
    assert counter.add(1) == 1


def test_output_is_forwarded_with_prefix(connected, capsys):
    counter = Counter()
    assert counter.talk("hello from the actor") == 20
    out = capsys.readouterr().out
    assert "[Counter pid=" in out and "hello from the actor" in out


def test_threads_share_one_actor(connected):
    counter = Counter()
    threads = [threading.Thread(target=lambda: [counter.add(1) for _ in range(50)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.count == 200


def test_reserved_names_and_options():
    with pytest.raises(TypeError, match="unknown @remote_class option"):
        xparl.remote_class(colour="red")
    with pytest.raises(ValueError, match="max_memory"):
        xparl.remote_class(max_memory=-1)


@xparl.remote_class(n_gpu=1)
class WantsGpu:
    pass


def test_gpu_request_is_refused_clearly(connected):
    with pytest.raises(xparl.ResourceError, match=r"n_gpu=1, but no worker .* has that many GPUs.*--gpu"):
        WantsGpu()  # the shared test cluster offers no GPU


def test_connect_twice_reuses_the_client(cluster, connected):
    assert xparl.connect(cluster.address, token=cluster.token) is connected
    assert xparl.get_global_client() is connected
