"""``ActorPool``: a fixed number of remote actors whose dead members are replaced and whose lost calls run again.

The pool holds ``size`` actors made by a factory, one per *slot*. Work goes to an actor as a call that returns a
future (``@remote_class(wait=False)``); each unit of work is a ``PoolTask``, itself a
``concurrent.futures.Future``. When an actor's process ends (its future raises ``ActorDiedError``), the pool logs
the slot and the cause, puts a fresh actor from the factory in the slot and sends the calls that actor had not
answered to the new one, in the order they were submitted (``on_death="resubmit"``), or completes them with the
``ActorDiedError`` (``on_death="report"``). Every task completes exactly once: a result that the dead actor had
already sent is kept, and futures of a replaced actor are ignored.

The pool does its work in the thread that asks it for results (``next_completed``, ``as_completed``, ``map``,
``call_all``, ``PoolTask.result``): it starts no thread of its own after the first actors are up, so a factory
and the callables that compute a call's arguments run where the caller's code runs. Use those methods and
``submit`` from one thread at a time; ``call`` (a blocking call on one slot) may be used from several threads,
one slot each.

Only the public future interface is used (``add_done_callback``, ``done``, ``exception``, ``result``), so the
pool works the same on an xparl cluster and on Ray (``parl_remote.connect("ray://...")``).
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from parl_remote.errors import ActorDiedError, ActorPoolError

_default_logger = logging.getLogger("parl_remote.pool")

ON_DEATH = ("resubmit", "report")


class PoolTask(concurrent.futures.Future):
    """One unit of work of an ``ActorPool``: a ``concurrent.futures.Future`` of its result.

    ``result(timeout)`` and ``exception(timeout)`` drive the pool until this task is done (replacing dead actors
    on the way), so they may be called directly. The task is running from the moment it is submitted:
    ``cancel()`` returns False.

    Attributes:
        slot: the slot whose actor runs the task (after a replacement: the new actor of that slot).
        attempts: how many actors the call was sent to (1, plus one per replacement it was sent again to).
    """

    def __init__(self, pool: ActorPool, fn: str | Callable[..., Any], args: tuple, slot: int, seq: int,
                 deliver: bool) -> None:
        super().__init__()
        self.set_running_or_notify_cancel()
        self.slot, self.attempts = slot, 0
        self._pool, self._fn, self._args, self._seq, self._deliver = pool, fn, args, seq, deliver

    def result(self, timeout: float | None = None) -> Any:
        """The call's result; see ``concurrent.futures.Future.result``.

        Raises:
            TimeoutError: not done within ``timeout`` seconds (``concurrent.futures.TimeoutError``).
            ActorPoolError: the pool gave up replacing an actor.
            Exception: what the remote method raised; ``ActorDiedError`` only with ``on_death="report"``.
        """
        if not self.done():
            self._pool._drive(self, timeout)
        return super().result(0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The call's exception or None; drives the pool like ``result``."""
        if not self.done():
            self._pool._drive(self, timeout)
        return super().exception(0)

    def __repr__(self) -> str:
        name = self._fn if isinstance(self._fn, str) else getattr(self._fn, "__name__", repr(self._fn))
        state = "done" if self.done() else "running"
        return f"<PoolTask #{self._seq} {name} slot={self.slot} attempts={self.attempts} {state}>"


def _is_future(value: Any) -> bool:
    return callable(getattr(value, "add_done_callback", None)) and callable(getattr(value, "result", None))


class ActorPool:
    """``size`` remote actors from ``factory``; a dead one is logged, replaced and its unanswered calls re-sent.

    Example::

        @parl_remote.remote_class(wait=False)
        class Worker:
            def square(self, x):
                return x * x

        pool = parl_remote.ActorPool(lambda slot: Worker(), size=4)
        for x in range(100):
            pool.submit("square", x)            # to the actor with the fewest calls in flight
        total = sum(task.result() for task in pool.as_completed())

    Args:
        factory: called with a slot index (0 .. size - 1) and returns a new actor for that slot, whose method
            calls return futures (``@remote_class(wait=False)``; ``call`` also takes blocking actors). The first
            ``size`` actors are made in parallel threads; replacements in the thread that drives the pool.
        size: the number of actors (>= 1).
        on_death: ``"resubmit"`` (default): the calls a dead actor had not answered are sent to its replacement,
            so the caller never sees ``ActorDiedError``; ``"report"``: they complete with that ``ActorDiedError``
            (the slot still gets a replacement), for work that cannot simply run again.
        max_failures: how many failures in a row a slot absorbs (an actor that died, a factory call that raised,
            with no completed call between them); one more raises ``ActorPoolError``. 3 by default: a crash
            loop stops the run instead of restarting actors forever.
        logger: where deaths and failed starts are reported (``warning``): a ``logging.Logger`` or anything with
            its ``warning(msg, *args)`` (``parl.utils.logger``). Default: the ``parl_remote.pool`` logger.

    Attributes:
        replacements: how many actors were replaced so far.

    Raises:
        ValueError / TypeError: a bad ``size``, ``on_death``, ``max_failures`` or ``factory`` (the message names
            the accepted values).
        Exception: what the factory raised while making the first actors (those already made are destroyed).
    """

    def __init__(self, factory: Callable[[int], Any], size: int, *, on_death: str = "resubmit",
                 max_failures: int = 3, logger: Any = None) -> None:
        if not callable(factory):
            raise TypeError(f"factory must be a callable that takes a slot index and returns an actor, not "
                            f"{type(factory).__name__}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an int >= 1 (the number of actors), not {size!r}")
        if on_death not in ON_DEATH:
            raise ValueError(f"on_death must be one of {ON_DEATH}, not {on_death!r}")
        if isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 0:
            raise ValueError(f"max_failures must be an int >= 0, not {max_failures!r}")
        self._factory, self._size, self._on_death, self._max_failures = factory, size, on_death, max_failures
        self._log = logger if logger is not None else _default_logger
        self.replacements = 0
        self._gen = [0] * size  # how many replacements each slot has had: tells a replaced actor's calls apart
        self._strikes = [0] * size  # failures since the slot's last completed call
        self._load = [0] * size  # calls in flight per slot
        self._pending: dict[Any, tuple[PoolTask, int, int]] = {}  # remote future -> (task, slot, generation)
        self._events: queue.SimpleQueue = queue.SimpleQueue()  # remote futures that completed
        self._finished: collections.deque[PoolTask] = collections.deque()  # submitted tasks done, not yet returned
        self._undelivered = 0  # tasks of submit() not yet returned by next_completed
        self._seq = itertools.count()
        self._lock = threading.Lock()  # bookkeeping shared with call() threads
        self._slot_locks = [threading.Lock() for _ in range(size)]  # one replacement of a slot at a time
        self._broken: ActorPoolError | None = None
        self._closed = False
        self._actors = self._start_all()

    def _start_all(self) -> list:
        if self._size == 1:
            return [self._factory(0)]
        with concurrent.futures.ThreadPoolExecutor(self._size, thread_name_prefix="actor-pool-start") as ex:
            starts = [ex.submit(self._factory, slot) for slot in range(self._size)]
            concurrent.futures.wait(starts)
        errors = [f.exception() for f in starts if f.exception() is not None]
        if errors:
            for f in starts:
                if f.exception() is None:
                    _destroy(f.result())
            raise errors[0]
        return [f.result() for f in starts]

    # ------------------------------------------------------------------------------------------- the actors
    @property
    def size(self) -> int:
        """The number of slots (actors)."""
        return self._size

    def __len__(self) -> int:
        return self._size

    @property
    def actors(self) -> list:
        """The current actor of each slot (a copy of the list)."""
        return list(self._actors)

    def __getitem__(self, slot: int) -> Any:
        """The current actor of ``slot``."""
        return self._actors[slot]

    @property
    def pending(self) -> int:
        """How many tasks of ``submit`` ``next_completed`` has yet to return (running or done)."""
        return self._undelivered

    def inflight(self, slot: int) -> int:
        """How many calls the actor of ``slot`` has in flight (sent through the pool, not yet answered)."""
        return self._load[self._check_slot(slot)]

    def _check_slot(self, slot: Any) -> int:
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < self._size:
            raise ValueError(f"slot must be an int in 0..{self._size - 1}, not {slot!r}")
        return slot

    # ------------------------------------------------------------------------------------------- submitting
    def submit(self, fn: str | Callable[..., Any], *args: Any, slot: int | None = None) -> PoolTask:
        """Sends one call to an actor and returns its task; ``next_completed`` returns the task once it is done.

        Args:
            fn: a method name (``pool.submit("sample", weights)`` calls ``actor.sample(weights)``) or a callable
                ``fn(actor, *args)`` that makes the call and returns its future. A callable runs again for a
                replacement, so it can compute fresh arguments then (the latest weights).
            *args: the call's arguments, kept for a re-send.
            slot: the slot whose actor takes the call (several calls may be in flight per actor; they run in
                order); None: the actor with the fewest calls in flight (the lowest slot among equals).

        Raises:
            ValueError: ``slot`` out of range; TypeError: ``fn`` is neither, or the call returned no future
                (declare the class ``@remote_class(wait=False)``); ActorPoolError: the pool gave up earlier;
                what the call itself raised while being sent (``SerializationError``, ``AttributeError``).
        """
        return self._submit(fn, args, slot, deliver=True)

    def _submit(self, fn: str | Callable[..., Any], args: tuple, slot: int | None, deliver: bool) -> PoolTask:
        self._check_usable()
        if not (isinstance(fn, str) or callable(fn)):
            raise TypeError(f"fn must be a method name or a callable fn(actor, *args), not {type(fn).__name__}")
        if slot is None:
            slot = min(range(self._size), key=self._load.__getitem__)
        task = PoolTask(self, fn, args, self._check_slot(slot), next(self._seq), deliver)
        self._send(task, slot, first=True)
        if deliver:
            self._undelivered += 1
        return task

    def _send(self, task: PoolTask, slot: int, first: bool = False) -> None:
        """Makes the task's call on the slot's current actor and registers its future."""
        with self._lock:
            actor, gen = self._actors[slot], self._gen[slot]
        task.slot = slot
        task.attempts += 1
        try:
            future = _invoke(task._fn, actor, task._args)
            if not _is_future(future):
                raise TypeError(f"{_name(task._fn)} returned {type(future).__name__}, not a future: an ActorPool "
                                f"needs actors whose calls return futures (@remote_class(wait=False)), or use "
                                f"pool.call for blocking actors")
        except ActorDiedError as err:  # known dead before sending: handled like a failed future
            future = concurrent.futures.Future()
            future.set_exception(err)
        except Exception as err:  # sending failed (an argument that cannot be pickled, no such method)
            if first:
                raise
            self._settle(task, error=err)
            return
        with self._lock:
            self._pending[future] = (task, slot, gen)
            self._load[slot] += 1
        future.add_done_callback(self._events.put)  # any thread; at once when already done

    def map(self, fn: str | Callable[..., Any], values: Iterable[Any], *,
            timeout: float | None = None) -> Iterator[Any]:
        """``fn`` on every value, spread over the actors; yields the results in the order of ``values``.

        Args:
            fn: a method name (``actor.fn(value)``) or a callable ``fn(actor, value)`` returning a future.
            values: one call each; all are sent at once.
            timeout: seconds to wait at most for each result.

        Raises:
            TimeoutError: a result took longer than ``timeout``; ActorPoolError: the pool gave up; the first
                exception a call raised (with ``on_death="report"``, ``ActorDiedError`` too).
        """
        tasks = [self._submit(fn, (value,), None, deliver=False) for value in values]
        return (task.result(timeout) for task in tasks)

    def call_all(self, fn: str | Callable[..., Any], *args: Any, timeout: float | None = None) -> list:
        """One call on every actor with the same arguments (a synchronous round); the results in slot order.

        A dead actor's call runs again on its replacement (``on_death="resubmit"``), with the same arguments.

        Raises:
            TimeoutError: the round took longer than ``timeout`` seconds; ActorPoolError: the pool gave up; the
                first exception a call raised (with ``on_death="report"``, ``ActorDiedError`` too).
        """
        tasks = [self._submit(fn, args, slot, deliver=False) for slot in range(self._size)]
        deadline = None if timeout is None else time.monotonic() + timeout
        for task in tasks:
            self._drive(task, None if deadline is None else max(deadline - time.monotonic(), 0.0))
        return [task.result(0) for task in tasks]

    def call(self, slot: int, fn: str | Callable[..., Any], *args: Any) -> Any:
        """A call on the actor of ``slot`` that waits for its result; blocking actors work too.

        A dead actor is logged and replaced; then the call runs again on the new actor (``on_death="resubmit"``)
        or the ``ActorDiedError`` is raised (``"report"``: the caller starts over, e.g. resets an episode whose
        state was in the dead actor). Safe to use from several threads, one slot each.

        Raises:
            ActorDiedError: the actor died (``on_death="report"``; the slot has a new actor already).
            ActorPoolError: the slot failed ``max_failures`` + 1 times in a row.
            what the remote method raised.
        """
        self._check_slot(slot)
        while True:
            self._check_usable()
            actor, gen = self._actors[slot], self._gen[slot]
            try:
                result = _invoke(fn, actor, args)
                if _is_future(result):
                    result = result.result()
            except ActorDiedError as err:
                self._replace(slot, gen, err)
                if self._on_death == "report":
                    raise
                continue
            self._strikes[slot] = 0
            return result

    # ------------------------------------------------------------------------------------------- results
    def next_completed(self, timeout: float | None = None) -> PoolTask:
        """The next task of ``submit`` to finish (each exactly once), replacing dead actors on the way.

        Args:
            timeout: seconds to wait at most (None: until one finishes).

        Returns:
            a done ``PoolTask``: ``task.result()`` is the value (or raises what the call raised), ``task.slot``
            the slot whose actor answered.

        Raises:
            ValueError: nothing is pending (``pool.pending == 0``): submit work first.
            TimeoutError: no task finished within ``timeout`` (``concurrent.futures.TimeoutError``).
            ActorPoolError: a slot failed ``max_failures`` + 1 times in a row; the pool gives up.
        """
        if not self._undelivered:
            raise ValueError("no task is pending in this ActorPool (pool.pending == 0): submit() work first")
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._finished:
            self._step(deadline, timeout)
        self._undelivered -= 1
        return self._finished.popleft()

    def as_completed(self, timeout: float | None = None) -> Iterator[PoolTask]:
        """Yields the tasks of ``submit`` as they finish until none is pending, tasks submitted meanwhile included.

        Raises:
            TimeoutError: none finished within ``timeout`` seconds of the previous one; ActorPoolError: as
                ``next_completed``.
        """
        while self._undelivered:
            yield self.next_completed(timeout)

    def _drive(self, task: PoolTask, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not task.done():
            self._step(deadline, timeout)

    def _step(self, deadline: float | None, timeout: float | None) -> None:
        """Handles one completed remote future (waiting for one until ``deadline``)."""
        self._check_usable()
        try:
            if deadline is None:
                future = self._events.get()
            else:
                future = self._events.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise concurrent.futures.TimeoutError(
                f"no call of the ActorPool finished within {timeout} s ({len(self._pending)} in flight)") from None
        with self._lock:
            entry = self._pending.pop(future, None)
            if entry is not None:
                self._load[entry[1]] -= 1
        if entry is None:  # a call of an actor that was replaced: its task went to the new actor
            return
        task, slot, gen = entry
        error = _error_of(future)
        if not isinstance(error, ActorDiedError):
            if gen == self._gen[slot]:
                self._strikes[slot] = 0
            self._settle(task, error=error, result=None if error is not None else future.result())
            return
        lost = [task]
        if gen == self._gen[slot]:  # the first news of this actor's death
            lost += self._take_lost(slot, gen)
            try:
                self._replace(slot, gen, error)
            except ActorPoolError as gave_up:
                for t in lost:
                    self._settle(t, error=gave_up)
                raise
        for t in sorted(lost, key=lambda t: t._seq):
            if self._on_death == "report":
                self._settle(t, error=error)
            else:
                self._send(t, slot)

    def _take_lost(self, slot: int, gen: int) -> list[PoolTask]:
        """Unregisters the calls the dead actor of ``slot`` will not answer (a result it already sent is kept)."""
        lost = []
        with self._lock:
            for future, (task, s, g) in list(self._pending.items()):
                if s == slot and g == gen and not (future.done() and not isinstance(_error_of(future),
                                                                                   ActorDiedError)):
                    del self._pending[future]
                    self._load[slot] -= 1
                    lost.append(task)
        return lost

    def _settle(self, task: PoolTask, error: BaseException | None = None, result: Any = None) -> None:
        if task.done():
            return
        if error is not None:
            task.set_exception(error)
        else:
            task.set_result(result)
        if task._deliver:
            self._finished.append(task)

    # ------------------------------------------------------------------------------------------- replacing
    def _replace(self, slot: int, gen: int, error: ActorDiedError) -> None:
        """Puts a new actor in ``slot`` after the death of its generation ``gen`` (a no-op when already done)."""
        with self._slot_locks[slot]:
            if self._gen[slot] != gen:  # another thread replaced it already
                return
            self._log.warning("actor %d died (%s: %s); starting a replacement", slot, type(error).__name__,
                              getattr(error, "cause", error))
            last: BaseException = error
            while True:
                self._strikes[slot] += 1
                if self._strikes[slot] > self._max_failures:
                    self._broken = ActorPoolError(
                        f"ActorPool slot {slot}: {self._strikes[slot]} failures in a row (actors that died and "
                        f"replacements that failed to start, with no completed call between them); the last: "
                        f"{type(last).__name__}: {getattr(last, 'cause', last)}. The pool gives up: fix what "
                        f"makes the actor fail (the error above; its log: `xparl status`, "
                        f"ClusterClient.actor_log), give the cluster a free CPU for each replacement, or allow "
                        f"more with ActorPool(max_failures=...)", slot=slot, cause=f"{type(last).__name__}: "
                        f"{getattr(last, 'cause', last)}")
                    self._broken.__cause__ = last
                    raise self._broken
                try:
                    actor = self._factory(slot)
                    break
                except Exception as err:  # noqa: BLE001 (counted, retried, and named when the pool gives up)
                    last = err
                    self._log.warning("starting a replacement for actor %d failed (%s: %s)", slot,
                                      type(err).__name__, getattr(err, "cause", err))
            with self._lock:
                old, self._actors[slot] = self._actors[slot], actor
                self._gen[slot] += 1
                self.replacements += 1
            _destroy(old)

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise self._broken
        if self._closed:
            raise ActorPoolError("this ActorPool is closed: make a new one")

    # ------------------------------------------------------------------------------------------- closing
    def close(self) -> None:
        """Ends the pool: unfinished tasks fail with ``CancelledError``, the actors are destroyed. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            tasks = [task for task, _, _ in self._pending.values()]
            self._pending.clear()
            actors, self._actors = self._actors, []
        for task in tasks:
            if not task.done():
                task.set_exception(concurrent.futures.CancelledError("the ActorPool was closed"))
        for actor in actors:
            _destroy(actor)

    def __enter__(self) -> ActorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<ActorPool size={self._size} in_flight={len(self._pending)} replacements={self.replacements}"
                f"{' closed' if self._closed else ''}>")


def _invoke(fn: str | Callable[..., Any], actor: Any, args: tuple) -> Any:
    return getattr(actor, fn)(*args) if isinstance(fn, str) else fn(actor, *args)


def _name(fn: str | Callable[..., Any]) -> str:
    return f"actor.{fn}()" if isinstance(fn, str) else f"{getattr(fn, '__name__', repr(fn))}(actor, ...)"


def _error_of(future: Any) -> BaseException | None:
    if future.cancelled():
        return concurrent.futures.CancelledError("the call was cancelled")
    return future.exception()


def _destroy(actor: Any) -> None:
    """Ends a replaced or unused actor now (its CPU returns to the cluster); nothing for objects without it."""
    destroy = getattr(type(actor), "destroy", None)
    if destroy is None:
        return
    try:
        destroy(actor)
    except Exception:  # noqa: BLE001 (a dead actor's handle: nothing left to end)
        _default_logger.debug("destroying %r failed", actor, exc_info=True)
