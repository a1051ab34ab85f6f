"""ActorPool: dead actors replaced and their unanswered calls sent again (every task done exactly once), the
report policy, giving up with a clear error, bad input; on a real cluster, actors killed with SIGKILL mid-call."""

from __future__ import annotations

import concurrent.futures
import logging
import os
import re
import signal
import threading
import time

import pytest
from conftest import wait_until

import parl_remote as xparl
from parl_remote import ActorDiedError, ActorPool, ActorPoolError

pytestmark = pytest.mark.timeout(90)

DIED = "killed by signal 9 (SIGKILL)"


# -- in process: actors whose futures the test completes -----------------------------------------------------
class FakeActor:
    """Calls return futures the test completes with ``answer`` / ``die``."""

    def __init__(self, name):
        self.name, self.calls, self.destroyed = name, [], False

    def work(self, x):
        future = concurrent.futures.Future()
        self.calls.append((x, future))
        return future

    def answer(self, index=0):
        x, future = self.calls[index]
        future.set_result((self.name, x))

    def die(self):
        for _, future in self.calls:
            if not future.done():
                future.set_exception(ActorDiedError(f"{self.name} died: {DIED}", cause=DIED))

    def destroy(self):
        self.destroyed = True


class Factory:
    def __init__(self, fail_after=None):
        self.made, self.fail_after = [], fail_after

    def __call__(self, slot):
        if self.fail_after is not None and len(self.made) >= self.fail_after:
            raise RuntimeError("the env's data folder is missing")
        actor = FakeActor(f"{slot}.{sum(1 for a in self.made if a.name.startswith(f'{slot}.'))}")
        self.made.append(actor)
        return actor


def test_a_dead_actors_unanswered_calls_go_to_its_replacement_in_order(caplog):
    factory = Factory()
    pool = ActorPool(factory, 2)
    first, second = pool.actors
    tasks = [pool.submit("work", i, slot=0) for i in range(3)] + [pool.submit("work", 9, slot=1)]
    assert pool.inflight(0) == 3 and pool.pending == 4
    first.answer(0)  # answered before the death: kept, not sent again
    first.die()
    with caplog.at_level(logging.WARNING, logger="parl_remote.pool"):
        done = pool.next_completed(timeout=5)
        assert done is tasks[0] and done.result() == ("0.0", 0) and done.attempts == 1
        with pytest.raises(concurrent.futures.TimeoutError):
            pool.next_completed(timeout=0.05)  # the death is handled on the way: the calls went to 0.1
    assert pool.replacements == 1 and first.destroyed
    replacement = pool[0]
    assert replacement.name == "0.1" and [x for x, _ in replacement.calls] == [1, 2]
    assert [r.getMessage() for r in caplog.records] == [f"actor 0 died (ActorDiedError: {DIED}); starting a "
                                                        f"replacement"]
    replacement.answer(1)
    replacement.answer(0)
    second.answer(0)
    finished = [pool.next_completed(timeout=5) for _ in range(3)]
    assert sorted((t.result(), t.slot, t.attempts) for t in finished) == [
        (("0.1", 1), 0, 2), (("0.1", 2), 0, 2), (("1.0", 9), 1, 1)]
    assert pool.pending == 0 and list(pool.as_completed()) == []
    with pytest.raises(ValueError, match="submit"):
        pool.next_completed()


def test_a_replaced_actors_late_futures_are_ignored():
    pool = ActorPool(Factory(), 1)
    old = pool[0]
    first, second = pool.submit("work", 1), pool.submit("work", 2)
    old.calls[0][1].set_exception(ActorDiedError("died", cause=DIED))  # the second call is not answered yet
    with pytest.raises(concurrent.futures.TimeoutError):
        first.result(timeout=0.05)  # drives the pool: replaced, both calls sent again
    old.answer(1)  # the replaced actor's future completes after all: ignored
    pool[0].answer(1)
    assert second.result(timeout=5) == ("0.1", 2) and not first.done()
    pool[0].answer(0)
    assert first.result(timeout=5) == ("0.1", 1) and pool.replacements == 1
    assert {pool.next_completed(timeout=1), pool.next_completed(timeout=1)} == {first, second}
    assert pool.pending == 0


def test_the_report_policy_completes_lost_calls_with_the_error():
    pool = ActorPool(Factory(), 1, on_death="report")
    tasks = [pool.submit("work", i) for i in range(2)]
    pool[0].die()
    got = [pool.next_completed(timeout=5) for _ in range(2)]
    assert got == tasks and all(isinstance(t.exception(), ActorDiedError) for t in got)
    assert pool.replacements == 1 and pool[0].name == "0.1" and pool[0].calls == []


def test_a_factory_that_keeps_failing_makes_the_pool_give_up_naming_the_cause_and_the_fix(caplog):
    pool = ActorPool(Factory(fail_after=1), 1, max_failures=3)
    task = pool.submit("work", 1)
    pool[0].die()
    with caplog.at_level(logging.WARNING, logger="parl_remote.pool"), pytest.raises(ActorPoolError) as info:
        pool.next_completed(timeout=5)
    message = str(info.value)
    assert "slot 0: 4 failures in a row" in message and "RuntimeError: the env's data folder is missing" in message
    assert "max_failures" in message and info.value.slot == 0 and isinstance(info.value.__cause__, RuntimeError)
    assert sum("starting a replacement for actor 0 failed" in r.getMessage() for r in caplog.records) == 3
    assert isinstance(task.exception(0), ActorPoolError)  # nothing left waiting
    with pytest.raises(ActorPoolError):
        pool.submit("work", 2)


def test_a_crash_loop_gives_up_after_max_failures():
    pool = ActorPool(Factory(), 1, max_failures=2)
    task = pool.submit("work", 1)
    with pytest.raises(ActorPoolError, match="3 failures in a row"):
        for _ in range(10):
            pool[0].die()  # every actor dies before answering
            try:
                task.result(timeout=0.05)
            except concurrent.futures.TimeoutError:
                pass
    assert pool.replacements == 2


def test_a_completed_call_resets_the_failure_count():
    pool = ActorPool(Factory(), 1, max_failures=1)
    for i in range(4):  # four deaths, each followed by a completed call: never two failures in a row
        pool.submit("work", i)
        pool[0].die()
        with pytest.raises(concurrent.futures.TimeoutError):
            pool.next_completed(timeout=0.05)
        pool[0].answer(0)
        assert pool.next_completed(timeout=5).result() == (f"0.{i + 1}", i)
    assert pool.replacements == 4


def test_callables_compute_arguments_again_for_a_replacement():
    pool = ActorPool(Factory(), 1)
    weights = ["w0"]
    task = pool.submit(lambda actor: actor.work(weights[0]))
    weights[0] = "w1"
    pool[0].die()
    with pytest.raises(concurrent.futures.TimeoutError):
        task.result(timeout=0.05)
    assert [x for x, _ in pool[0].calls] == ["w1"]


class ImmediateActor:
    def __init__(self, slot):
        self.slot = slot

    def square(self, x):
        future = concurrent.futures.Future()
        future.set_result((self.slot, x * x))
        return future

    def blocking(self, x):
        return x + 1


def test_map_call_all_and_call():
    pool = ActorPool(ImmediateActor, 3)
    assert [r for _, r in pool.map("square", range(7))] == [x * x for x in range(7)]
    assert pool.call_all("square", 2) == [(0, 4), (1, 4), (2, 4)]
    assert pool.call(1, "blocking", 1) == 2 and pool.call(2, "square", 3) == (2, 9)
    assert pool.pending == 0  # map / call_all keep their own tasks


def test_call_replaces_a_dead_blocking_actor_and_reports_or_repeats():
    class Mortal:
        made = []

        def __init__(self, slot):
            self.dead = bool(Mortal.made) is False  # the first actor is dead
            Mortal.made.append(self)

        def step(self, x):
            if self.dead:
                raise ActorDiedError("died", cause=DIED)
            return x

    report = ActorPool(Mortal, 1, on_death="report")
    with pytest.raises(ActorDiedError):
        report.call(0, "step", 5)
    assert report.call(0, "step", 5) == 5 and report.replacements == 1
    Mortal.made.clear()
    again = ActorPool(Mortal, 1)
    assert again.call(0, "step", 6) == 6 and again.replacements == 1


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        ActorPool(ImmediateActor, 0)
    with pytest.raises(ValueError, match="on_death must be one of"):
        ActorPool(ImmediateActor, 1, on_death="retry")
    with pytest.raises(ValueError, match="max_failures"):
        ActorPool(ImmediateActor, 1, max_failures=-1)
    with pytest.raises(TypeError, match="factory must be a callable"):
        ActorPool([ImmediateActor], 1)
    pool = ActorPool(ImmediateActor, 2)
    with pytest.raises(ValueError, match=r"slot must be an int in 0\.\.1"):
        pool.submit("square", 1, slot=2)
    with pytest.raises(TypeError, match=r"wait=False"):
        pool.submit("blocking", 1)
    with pytest.raises(AttributeError):
        pool.submit("no_such_method", 1)
    assert pool.pending == 0


def test_a_failing_first_start_destroys_the_actors_already_made():
    made = []

    def factory(slot):
        if slot == 1:
            raise RuntimeError("no env")
        made.append(FakeActor(str(slot)))
        return made[-1]

    with pytest.raises(RuntimeError, match="no env"):
        ActorPool(factory, 3)
    assert made and all(a.destroyed for a in made)


def test_close_fails_unfinished_tasks():
    pool = ActorPool(Factory(), 1)
    task = pool.submit("work", 1)
    pool.close()
    assert isinstance(task.exception(0), concurrent.futures.CancelledError)
    with pytest.raises(ActorPoolError, match="closed"):
        pool.submit("work", 2)


# -- a real cluster: SIGKILL mid-call ----------------------------------------------------------------------------
@xparl.remote_class(wait=False)
class Worker:
    def pid(self):
        return os.getpid()

    def work(self, i, seconds, started_dir=None):
        if started_dir:  # lets the test see (by polling) which call runs
            open(os.path.join(started_dir, str(i)), "w").close()
        time.sleep(seconds)
        return i, os.getpid()


def test_sigkill_of_an_actor_mid_call_loses_and_duplicates_nothing(connected, caplog, tmp_path):
    pool = ActorPool(lambda slot: Worker(), 2)
    pids = pool.call_all("pid")
    assert len(set(pids)) == 2
    n = 16
    tasks = {pool.submit("work", i, 0.2, str(tmp_path)): i for i in range(n)}  # 8 per actor, in order
    assert pool.inflight(0) == pool.inflight(1) == 8
    assert sorted(i for task, i in tasks.items() if task.slot == 0) == list(range(0, n, 2))
    wait_until(lambda: (tmp_path / "4").exists(), 30.0, message="slot 0's third call to start")
    os.kill(pids[0], signal.SIGKILL)  # mid-call, 5 more queued; an actor of the cluster this test started
    results = {}
    with caplog.at_level(logging.WARNING, logger="parl_remote.pool"):
        for task in pool.as_completed(timeout=30):
            i, pid = task.result()
            assert tasks[task] == i and i not in results  # each result once
            results[i] = (pid, task.slot)
    assert sorted(results) == list(range(n)) and pool.replacements == 1 and pool.pending == 0
    new_pid = pool.call_all("pid")[0]
    assert new_pid not in pids and psutil_gone(pids[0])
    assert {pid for pid, slot in results.values() if slot == 0} <= {pids[0], new_pid}
    assert results[n - 2] == (new_pid, 0)  # the lost calls ran on the replacement
    assert all(pid == pids[1] for pid, slot in results.values() if slot == 1)
    died = [r.getMessage() for r in caplog.records if "died" in r.getMessage()]
    assert len(died) == 1 and re.fullmatch(r"actor 0 died \(ActorDiedError: killed by signal 9 \(SIGKILL\)\); "
                                           r"starting a replacement", died[0]), died
    pool.close()


def psutil_gone(pid):
    import psutil

    def gone():
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return wait_until(gone, 10.0, message=f"pid {pid} to end")


def test_a_real_actor_that_cannot_be_replaced_stops_the_pool_with_the_cause(connected):
    starts = []

    def factory(slot):
        if starts:
            raise xparl.ResourceError("no free CPU in the cluster (test)")
        starts.append(slot)
        return Worker()

    pool = ActorPool(factory, 1, max_failures=1)
    pid = pool.call_all("pid")[0]
    task = pool.submit("work", 0, 30.0)
    os.kill(pid, signal.SIGKILL)  # an actor of the cluster this test started
    with pytest.raises(ActorPoolError, match=r"ResourceError: no free CPU in the cluster \(test\)") as info:
        pool.next_completed(timeout=30)
    assert "max_failures" in str(info.value) and task.done()
    pool.close()


def test_call_from_several_threads_each_replaces_its_own_slot(connected):
    @xparl.remote_class
    class Blocking:
        def pid(self):
            return os.getpid()

    pool = ActorPool(lambda slot: Blocking(), 2, on_death="report")
    pids = [pool.call(slot, "pid") for slot in range(2)]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)  # actors of the cluster this test started
        psutil_gone(pid)
    errors = []

    def agent(slot):
        try:
            pool.call(slot, "pid")
        except ActorDiedError as err:
            errors.append(err)
        errors.append(pool.call(slot, "pid"))

    threads = [threading.Thread(target=agent, args=(slot,)) for slot in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    new = [e for e in errors if isinstance(e, int)]
    assert len(new) == 2 and not set(new) & set(pids) and pool.replacements == 2
    pool.close()
