"""The client's I/O thread for future-mode actors: sends queued calls, completes their futures.

It waits on every adopted actor's connection at once (``Connection.poll_key`` in one ``zmq.Poller``) and
on a wake-up pipe; small calls queued together for one actor are coalesced into one ``BATCH`` message.
It talks to the connections only through ``transport/base.py``'s interface.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any

import zmq

from parl_remote.client.actor import ActorConnection
from parl_remote.client.future import RemoteFuture
from parl_remote.errors import ActorDiedError, RemoteError
from parl_remote.transport.base import WRITABLE, ConnectionLost, SendFailed
from parl_remote.wire import serialization
from parl_remote.wire.protocol import Message, MsgType

_POLL_MS = 100  # the wait while a watched (zmq) connection needs its liveness checked
_IDLE_POLL_MS = 1000  # the wait when no connection needs watching (streams: their end is an event)
_LOST_CAUSE_WAIT_S = 1.0  # the master is asked this long at most: other actors' futures wait meanwhile


class Reactor(threading.Thread):
    """The client's I/O thread for future-mode actors: sends queued calls, completes futures."""

    def __init__(self) -> None:
        super().__init__(name="xparl-reactor", daemon=True)
        self.commands: collections.deque = collections.deque()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        self.stopping = False
        self.sleeping = False  # set by the reactor before it blocks; submitters wake it only then
        self.actors: dict[Any, ActorConnection] = {}  # by poll key: zmq socket, or stream fd
        self.masks: dict[ActorConnection, int] = {}  # the events each actor's poll key is registered for
        self.pending: dict[ActorConnection, dict[int, tuple[RemoteFuture, bool]]] = {}

    def _wake(self) -> None:
        if not self.sleeping:  # the reactor checks the queue again after setting `sleeping`
            return
        try:
            os.write(self.wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def adopt(self, actor: ActorConnection) -> None:
        """Hands an actor's socket over to this thread (after its ``__init__`` succeeded)."""
        actor.reactor = self
        self.commands.append(("adopt", actor))
        self._wake()

    def submit(self, actor: ActorConnection, msg_type: MsgType, payload: list, raw: bool = False) -> RemoteFuture:
        """Queues a request; the future gets the result (or the raw reply message when ``raw``)."""
        future = RemoteFuture()
        if actor.dead is not None:
            future.set_exception(actor.died_again())
            return future
        if self.stopping or actor.closed:
            future.set_exception(RemoteError(f"{actor.where} was deleted or its client disconnected"))
            return future
        self.commands.append(("send", actor, msg_type, payload, future, raw))
        self._wake()
        return future

    def close_actor(self, actor: ActorConnection) -> None:
        self.commands.append(("close", actor))
        self._wake()

    def stop(self) -> None:
        self.stopping = True
        self.commands.append(("stop",))
        self._wake()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5)

    # ------------------------------------------------------------------------------------- loop
    def run(self) -> None:
        poller = self.poller = zmq.Poller()
        poller.register(self.wake_r, zmq.POLLIN)
        running = True
        last_check = time.monotonic()
        while running:
            self.sleeping = True
            wait_ms = _POLL_MS if any(a.conn.watched for a in self.actors.values()) else _IDLE_POLL_MS
            ready = dict(poller.poll(0 if self.commands else wait_ms))
            self.sleeping = False
            if self.wake_r in ready:
                try:
                    os.read(self.wake_r, 65536)
                except BlockingIOError:
                    pass
            batches: dict[ActorConnection, list] = {}
            while self.commands:
                command = self.commands.popleft()
                kind = command[0]
                if kind == "send":
                    actor, payload = command[1], command[3]
                    if len(payload) == 1:  # small: coalesced with the other queued calls of this actor
                        batches.setdefault(actor, []).append(command[1:])
                        continue
                    self._flush(actor, batches.pop(actor, []))
                    self._send(*command[1:])
                    continue
                for actor, items in batches.items():
                    self._flush(actor, items)
                batches.clear()
                if kind == "adopt":
                    actor = command[1]
                    self.actors[actor.conn.poll_key] = actor
                    self.pending[actor] = {}
                    self.masks[actor] = zmq.POLLIN
                    poller.register(actor.conn.poll_key, zmq.POLLIN)
                elif kind == "close":
                    self._close(command[1], poller)
                elif kind == "stop":
                    running = False
            for actor, items in batches.items():
                self._flush(actor, items)
            for key, actor in list(self.actors.items()):
                events = ready.get(key)
                if events:
                    if events & WRITABLE:
                        self._send_queued(actor)
                    if events & ~WRITABLE:
                        self._read(actor)
                if not actor.conn.closed:
                    self._watch_output(actor, key)
            if time.monotonic() - last_check > _POLL_MS / 1000:
                last_check = time.monotonic()
                self._check_all(poller)
        for actor in list(self.actors.values()):
            self._close(actor, poller)
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _watch_output(self, actor: ActorConnection, key: Any) -> None:
        """Waits for room on a connection that has bytes queued (WRITABLE), and stops waiting when it has none."""
        want = actor.conn.wanted_events()
        if want != self.masks.get(actor) and key in self.actors:
            self.masks[actor] = want
            self.poller.modify(key, want)

    def _send_queued(self, actor: ActorConnection) -> None:
        try:
            actor.conn.flush()
        except ConnectionLost as exc:
            self._lost(actor, exc.cause)

    def _lost(self, actor: ActorConnection, cause: str | None = None) -> None:
        """An actor's connection ended: the job is gone; fail its calls with the master's cause."""
        actor.mark_dead(cause, _LOST_CAUSE_WAIT_S)
        self._fail_pending(actor)
        self._forget(actor, self.poller)

    def _send(self, actor: ActorConnection, msg_type: MsgType, payload: list, future: RemoteFuture, raw: bool) -> None:
        if actor.dead is not None or actor.conn.closed:
            future.set_exception(actor.died_again() if actor.dead else RemoteError(f"{actor.where} was deleted"))
            return
        if not future.set_running_or_notify_cancel():
            return
        rid = next(actor.ids)
        self.pending[actor][rid] = (future, raw)
        try:
            actor.conn.send(msg_type, rid, payload, wait=False)
        except ConnectionLost as exc:
            self._lost(actor, exc.cause)
        except SendFailed as exc:
            self.pending[actor].pop(rid, None)
            future.set_exception(RemoteError(f"cannot send to {actor.where}: {exc}"))

    def _flush(self, actor: ActorConnection, items: list) -> None:
        """Sends queued small calls of one actor: one message, or one BATCH message for several."""
        if len(items) <= 1:
            for item in items:
                self._send(*item)
            return
        if actor.dead is not None or actor.conn.closed:
            for item in items:
                self._send(*item)  # fails each future with the right error
            return
        entries = []
        futures = []
        for _, msg_type, payload, future, raw in items:
            if not future.set_running_or_notify_cancel():
                continue
            rid = next(actor.ids)
            self.pending[actor][rid] = (future, raw)
            entries.append((int(msg_type), rid, bytes(payload[0])))
            futures.append((rid, future))
        try:
            actor.conn.send(MsgType.BATCH, 0, serialization.dumps(entries), wait=False)
        except ConnectionLost as exc:
            self._lost(actor, exc.cause)
        except SendFailed as exc:
            for rid, future in futures:
                self.pending[actor].pop(rid, None)
                future.set_exception(RemoteError(f"cannot send to {actor.where}: {exc}"))

    def _read(self, actor: ActorConnection) -> None:
        """Completes the futures of the replies that have arrived (without waiting)."""
        conn = actor.conn
        while not conn.closed:
            try:
                msg = actor.receive(0)
            except ConnectionLost as exc:
                if actor.dead is None:
                    self._lost(actor, exc.cause)
                return
            if msg is None:
                return
            self._dispatch(actor, msg)

    def _dispatch(self, actor: ActorConnection, msg: Message | None) -> None:
        if msg is None:
            return
        if msg.type is MsgType.BATCH:
            for raw_type, rid, body in msg.body():
                self._resolve(actor, Message(MsgType(raw_type), rid, [body]))
        else:
            self._resolve(actor, msg)

    def _resolve(self, actor: ActorConnection, msg: Message) -> None:
        pending = self.pending.get(actor, {})
        entry = pending.pop(msg.req_id, None)
        if entry is None:
            return
        future, raw = entry
        if actor.closed and not pending:
            self._forget(actor, self.poller)
            actor.send_delete_and_close(send_delete=False)
        if future is None:
            return
        if raw:
            future.set_result(msg)
            return
        try:
            value = actor.result_of(msg)
        except BaseException as exc:  # noqa: BLE001
            future.set_exception(exc)
        else:
            future.set_result(value)

    def _check_all(self, poller: zmq.Poller) -> None:
        for actor in list(self.actors.values()):
            try:
                actor.check_liveness()
            except ActorDiedError:
                self._fail_pending(actor)
                self._forget(actor, poller)

    def _fail_pending(self, actor: ActorConnection) -> None:
        for future, _ in self.pending.get(actor, {}).values():
            if future is not None and not future.done():
                future.set_exception(actor.died_again(sent=True))
        self.pending.pop(actor, None)

    def _forget(self, actor: ActorConnection, poller: zmq.Poller) -> None:
        self.actors = {s: a for s, a in self.actors.items() if a is not actor}
        self.masks.pop(actor, None)
        try:
            poller.unregister(actor.conn.poll_key)
        except KeyError:
            pass

    def _close(self, actor: ActorConnection, poller: zmq.Poller) -> None:
        if self.pending.get(actor) and actor.dead is None and not self.stopping:
            # calls still in flight: the job runs them before the DELETE; close when their replies are in
            rid = next(actor.ids)
            self.pending[actor][rid] = (None, False)
            try:
                actor.conn.send(MsgType.DELETE, rid, serialization.dumps(None), wait=False)
                return
            except (ConnectionLost, SendFailed):
                pass
        if actor in self.pending:
            for future, _ in self.pending[actor].values():
                if future is not None and not future.done():
                    future.set_exception(RemoteError(f"{actor.where} was deleted before the call finished"))
            self.pending.pop(actor, None)
        if any(a is actor for a in self.actors.values()):
            self._forget(actor, poller)
        actor.send_delete_and_close()
