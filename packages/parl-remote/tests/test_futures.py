"""Future mode (wait=False): ordering, pipelining, timeouts, concurrent.futures interoperability."""

from __future__ import annotations

import concurrent.futures
import threading
import time

import pytest

import parl_remote as xparl

pytestmark = pytest.mark.timeout(60)


@xparl.remote_class(wait=False)
class Recorder:
    def __init__(self):
        self.seen = []

    def record(self, value):
        self.seen.append(value)
        return value

    def history(self):
        return list(self.seen)

    def sleep(self, seconds):
        time.sleep(seconds)
        return seconds

    def fail(self):
        raise KeyError("missing")


def test_futures_resolve_in_order(connected):
    actor = Recorder()
    futures = [actor.record(i) for i in range(500)]
    assert all(isinstance(f, xparl.RemoteFuture) and isinstance(f, concurrent.futures.Future) for f in futures)
    assert [f.get() for f in futures] == list(range(500))
    assert actor.history().result() == list(range(500))
    assert actor.seen == list(range(500))  # attribute reads block and return the value


def test_get_timeout_and_nowait(connected):
    actor = Recorder()
    slow = actor.sleep(1.0)
    with pytest.raises(xparl.FutureObjectEmpty):
        slow.get(block=False)
    with pytest.raises(TimeoutError):
        slow.get(timeout=0.05)
    assert slow.empty()
    assert slow.get(timeout=10) == 1.0
    assert not slow.empty() and slow.get_nowait() == 1.0 and slow.get() == 1.0  # get() may repeat


def test_as_completed_wait_and_callbacks(connected):
    actors = [Recorder() for _ in range(2)]
    futures = [actors[0].sleep(0.4), actors[1].sleep(0.05)]
    order = [f.result() for f in concurrent.futures.as_completed(futures, timeout=10)]
    assert order == [0.05, 0.4]
    done, not_done = concurrent.futures.wait([actors[0].record("x")], timeout=10)
    assert len(done) == 1 and not not_done
    called = threading.Event()
    results = []
    future = actors[1].record(42)
    future.add_done_callback(lambda f: (results.append(f.result()), called.set()))
    assert called.wait(10) and results == [42]


def test_future_exception(connected):
    actor = Recorder()
    future = actor.fail()
    with pytest.raises(KeyError) as info:
        future.get()
    assert isinstance(info.value, xparl.RemoteError)
    assert isinstance(future.exception(timeout=5), KeyError)
    assert actor.record(1).get() == 1  # still alive


def test_calls_in_flight_before_delete_complete(connected):
    future = Recorder().record("last words")  # the proxy is dropped at once; the call still completes
    assert future.get(timeout=10) == "last words"


def test_batched_calls_keep_order_with_large_arguments_and_errors(connected):
    np = pytest.importorskip("numpy")
    actor = Recorder()
    big = np.ones(2**19)  # 4 MiB: not coalesced, sent on its own between batches
    futures = []
    for i in range(300):
        if i % 100 == 50:
            futures.append(actor.record(big))
        elif i % 100 == 70:
            futures.append(actor.fail())
        else:
            futures.append(actor.record(i))
    for i, future in enumerate(futures):
        if i % 100 == 50:
            assert future.get(timeout=20).shape == big.shape
        elif i % 100 == 70:
            with pytest.raises(KeyError):
                future.get(timeout=20)
        else:
            assert future.get(timeout=20) == i
    seen = actor.history().get(timeout=20)
    assert [v for v in seen if isinstance(v, int)] == [i for i in range(300) if i % 100 not in (50, 70)]
    assert len(seen) == 297
