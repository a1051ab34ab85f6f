"""The futures of future-mode (``wait=False``) actors on Ray: a ``RemoteFuture`` over a Ray object ref."""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from typing import Any

from parl_remote.client.future import RemoteFuture

_WATCH_QUEUE: queue.SimpleQueue | None = None
_WATCH_LOCK = threading.Lock()


def _watch_later(future: RayFuture) -> None:
    """Has one background thread register Ray's callback of ``future`` (see ``RayFuture._waiters``)."""
    global _WATCH_QUEUE
    with _WATCH_LOCK:
        if _WATCH_QUEUE is None:
            _WATCH_QUEUE = queue.SimpleQueue()
            threading.Thread(target=_watch_loop, args=(_WATCH_QUEUE,), name="parl-ray-futures", daemon=True).start()
    _WATCH_QUEUE.put(future)


def _watch_loop(pending: queue.SimpleQueue) -> None:
    while True:
        future = pending.get()
        try:
            future._watch()
        except Exception as exc:  # noqa: BLE001 - e.g. Ray shut down meanwhile: the future fails, not the thread
            future._settle(exception=exc)


class RayFuture(RemoteFuture):
    """A ``RemoteFuture`` over a Ray object ref that asks Ray to call back only when something waits on it.

    ``get()`` / ``result()`` read the ref with ``ray.get`` (as a plain Ray user's ``ray.get`` does); Ray's
    completion callback (``ObjectRef.future()``, which costs about as much as the call itself) is registered only
    for ``done()``, ``add_done_callback`` and the waiters of ``concurrent.futures.wait`` / ``as_completed`` (they
    reach ``_waiters``, made a property here for that).
    """

    def __init__(self, ref: Any, ray: Any, translate: Any) -> None:
        self._watching = False
        self._ray_ref, self._ray, self._translate_error = ref, ray, translate
        super().__init__()
        self._state = "RUNNING"  # set_running_or_notify_cancel() without its lock: nobody else holds this yet

    @property
    def _waiters(self) -> list:
        # read by concurrent.futures.wait / as_completed while they hold this future's lock: Ray is called from
        # another thread (calling it here could settle the future before their waiter is in the list, and Ray
        # Client's thread, settling another future, can wait for a lock they hold)
        if self._state == "RUNNING" and not self._watching:
            _watch_later(self)
        return self.__dict__["_waiter_list"]

    @_waiters.setter
    def _waiters(self, value: list) -> None:
        self.__dict__["_waiter_list"] = value

    def _watch(self) -> None:
        with _WATCH_LOCK:  # one lock for all: taken once per future that something waits on
            if self._watching:
                return
            self._watching = True
        self._ray_ref.future().add_done_callback(self._settle_from)

    def _settle_from(self, done: concurrent.futures.Future) -> None:
        try:
            value = done.result()
        except BaseException as exc:  # noqa: BLE001 - handed to the future
            self._settle(exception=self._translate_error(exc))
        else:
            self._settle(value=value)

    def _settle(self, value: Any = None, exception: BaseException | None = None) -> None:
        try:
            if exception is not None:
                self.set_exception(exception)
            else:
                self.set_result(value)
        except concurrent.futures.InvalidStateError:  # settled by the other path first
            pass

    def _fetch(self, timeout: float | None) -> None:
        if self._state != "RUNNING":
            return
        try:
            value = self._ray.get(self._ray_ref, timeout=timeout)
        except self._ray.exceptions.GetTimeoutError:
            raise concurrent.futures.TimeoutError() from None
        except BaseException as exc:  # noqa: BLE001 - handed to the future
            self._settle(exception=self._translate_error(exc))
        else:
            self._settle(value=value)

    def result(self, timeout: float | None = None) -> Any:
        self._fetch(timeout)
        return super().result(0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._fetch(timeout)
        return super().exception(0)

    def done(self) -> bool:
        if self._state == "RUNNING":
            self._watch()
        return super().done()

    def add_done_callback(self, fn: Any) -> None:
        self._watch()
        super().add_done_callback(fn)
