"""A job's message handlers: ``INIT`` (load the class, build the object), ``FILES``, ``CALL``, ``GET_ATTR``,
``SET_ATTR``, ``BATCH`` (several requests in order, one reply message) and ``DELETE``; and how replies and
errors are made. User code runs in the main thread, in order; a ``KeyboardInterrupt`` is never turned
into a reply.
"""

from __future__ import annotations

import logging
import os
import pathlib
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import zmq

from parl_remote import files
from parl_remote.errors import SHM_LOSS_HINT, RemoteError, SerializationError, TransferError, error_body
from parl_remote.server.class_loading import load_class
from parl_remote.transport import zmq_io
from parl_remote.wire import protocol, serialization, shm, shm_arena
from parl_remote.wire.protocol import Message, MsgType

logger = logging.getLogger(__name__)

# the job's handler table: message type -> method of ``Handlers``
HANDLERS = {
    MsgType.INIT: "on_init",
    MsgType.FILES: "on_files",
    MsgType.CALL: "on_call",
    MsgType.GET_ATTR: "on_get_attr",
    MsgType.SET_ATTR: "on_set_attr",
    MsgType.DELETE: "on_delete",
    MsgType.BATCH: "on_batch",
}


class Handlers:
    """The handler half of ``Job`` (a mixin: it uses the job's state and its ``_send``)."""

    def _reply(self, msg: Message, body: Any = None, msg_type: MsgType = MsgType.REPLY, what: str = "") -> None:
        """Answers ``msg`` with ``body``; ``what`` names the value for the error sent when it cannot be pickled
        (e.g. ``"the return value of Foo.bar()"``)."""
        self._flush_output()
        try:
            payload = serialization.dumps(body)
        except Exception as exc:  # an unpicklable return value
            msg_type = MsgType.ERROR
            if what:
                cause = exc.__cause__ if exc.__cause__ is not None else exc
                exc = SerializationError(
                    f"cannot send {what} back ({type(body).__name__}): {cause}. Return a picklable value "
                    "(plain data, numpy arrays, module-level functions)"
                )
            payload = serialization.dumps(error_body(exc, traceback.format_exc()))
        if self.batch_out is not None:
            if len(payload) == 1:
                self.batch_out.append((int(msg_type), msg.req_id, bytes(payload[0])))
                return
            self._flush_batch(msg)  # keep the replies in order
        self._send(msg_type, msg.req_id, payload, self.reply_route)

    def _answer_unreadable(self, exc: protocol.Unreadable) -> None:
        """Answers a request whose arguments could not be read from shared memory with a ``TransferError``
        (its method does not run; the connection stays up)."""
        logger.warning("job %s: a %s request could not be read: %s", self.job_id, exc.type.name, exc)
        if not exc.req_id:
            return  # a notification: nobody waits for an answer
        error = TransferError(
            f"actor {self.actor_id}: the arguments of this call could not be read from shared memory, so it did "
            f"not run: {exc}. {SHM_LOSS_HINT}"
        )
        self._reply(Message(exc.type, exc.req_id, [b""]), error_body(error, ""), MsgType.ERROR)

    def _dispatch(self, msg: Message) -> None:
        """Runs the handler of ``msg``'s type (from the ROUTER or a stream peer; the reply state is set): a type
        without one is logged, and a request its handler could not read is answered by ``_malformed``."""
        handler = self.handlers.get(msg.type)
        if handler is None:
            logger.warning("job %s: unexpected message %s", self.job_id, msg.type.name)
            return
        try:
            handler(msg)
        except Exception as exc:  # noqa: BLE001 - a malformed (signed) request: answer it, stay up
            self._malformed(msg, exc)

    def _malformed(self, msg: Message, exc: Exception) -> None:
        """A signed request that its handler could not read (a token holder's malformed body): logged and, when
        someone waits for it, answered with an error; the job stays up."""
        logger.warning("job %s: could not read a %s request: %r", self.job_id, msg.type.name, exc)
        self.batch_out = None
        if msg.req_id:
            error = RemoteError(f"actor {self.actor_id}: the job could not read this {msg.type.name} request ({exc!r})")
            self._reply(msg, error_body(error, ""), MsgType.ERROR)

    def _reply_error(self, msg: Message, exc: BaseException) -> None:
        tb_text = traceback.format_exc()
        body = error_body(exc, tb_text)
        self._reply(msg, body, MsgType.ERROR)
        if self.actor_id is not None:
            report = {k: body[k] for k in ("type", "message", "traceback")}
            report.update(actor_id=self.actor_id, time=time.time())
            try:
                zmq_io.send(self.worker, self.signer, MsgType.ACTOR_FAILED_CALL, 0, report, flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    # ------------------------------------------------------------------------------------- handlers
    def on_files(self, msg: Message) -> None:
        body = msg.body()
        try:
            files.extract(self._cache_root(), body["files_hash"], body["files"])
        except Exception as exc:
            self._reply_error(msg, exc)
            return
        self._reply(msg, True)

    def _cache_root(self) -> Any:

        return pathlib.Path(self.cache_dir)

    def on_init(self, msg: Message) -> None:
        if self.obj is not None:
            self._reply_error(msg, RuntimeError("this job already hosts an actor"))
            return
        body = msg.body()
        visible = body.get("cuda_visible_devices")
        if visible is not None:  # the GPUs the master granted ("" for none), before any user code is imported
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
        files_hash = body.get("files_hash")
        if files_hash:
            folder = files.cached_dir(self._cache_root(), files_hash)
            if folder is None:
                self._reply(msg, files_hash, MsgType.NEED_FILES)
                return
            sys.path.insert(0, str(folder))
            os.chdir(folder)
        self.client = self.sender
        self.actor_id = body["actor_id"]
        # same host id, and proof of a shared /dev/shm: the client's nonce file reads the same here
        self.peer_same_host = shm.available() and body.get("host_id") == shm.host_id() and \
            shm.check_proof(body.get("shm_proof"))
        if self.peer_same_host and self.shm_channel is None:
            self.use_shared_memory(shm_arena.Channel())
        self._open_log(body.get("forward_output", True))
        try:
            cls = self._load_class(body)
            self.class_name = cls.__name__
            args, kwargs = serialization.loads(body["args"])
            self.in_user_code = True
            try:
                self.obj = cls(*args, **kwargs)
            finally:
                self._leave_user_code()
        except BaseException as exc:  # noqa: BLE001 - reported to the client
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._reply_error(msg, exc)
            return
        info = {"pid": os.getpid(), "host_id": shm.host_id() if shm.available() else ""}
        # instance attributes named like a method of the class: PARL (like Python) reads the attribute
        shadowed = [k for k in getattr(self.obj, "__dict__", {}) if callable(getattr(type(self.obj), k, None))]
        if shadowed:
            info["shadowed"] = shadowed
        info["shared_shm"] = bool(self.peer_same_host)
        if self.peer_same_host and self.ipc_address:
            info["ipc"] = self.ipc_address
        if self.peer_same_host and self.stream_name:
            info["unix"] = self.stream_name
        self._reply(msg, info)

    def _load_class(self, body: dict) -> type:
        return load_class(body.get("class_ref"), body.get("class_blob"))

    def _run_user_code(self, msg: Message, step: Callable[[], Any]) -> tuple[bool, Any]:
        """Runs ``step`` (user code) with output forwarding on; an exception it raises is answered as the call's
        error (the actor stays alive), except ``KeyboardInterrupt``, which propagates.

        Returns:
            ``(True, result)``, or ``(False, None)`` when the error was answered.
        """
        try:
            self.in_user_code = True
            try:
                return True, step()
            finally:
                self._leave_user_code()
        except BaseException as exc:  # noqa: BLE001 - the caller gets the error
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._reply_error(msg, exc)
            return False, None

    def on_call(self, msg: Message) -> None:
        try:
            name, args, kwargs = msg.body()
        except Exception as exc:  # noqa: BLE001 - an argument that cannot be unpickled here
            self._reply_error(msg, exc)
            return
        ok, result = self._run_user_code(msg, lambda: getattr(self.obj, name)(*args, **kwargs))
        if ok:
            self._reply(msg, result, what=f"the return value of {self.class_name}.{name}()")

    def on_get_attr(self, msg: Message) -> None:
        name = msg.body()
        ok, value = self._run_user_code(msg, lambda: getattr(self.obj, name))
        if ok:
            self._reply(msg, value, what=f"attribute {name!r} of {self.class_name}")

    def on_set_attr(self, msg: Message) -> None:
        try:
            name, value = msg.body()
        except Exception as exc:  # noqa: BLE001 - a value that cannot be unpickled here
            self._reply_error(msg, exc)
            return
        ok, _ = self._run_user_code(msg, lambda: setattr(self.obj, name, value))
        if ok:
            self._reply(msg, None)

    def on_batch(self, msg: Message) -> None:
        """Runs several requests in order and answers them with one BATCH message."""
        self.batch_out = []
        try:
            for raw_type, rid, body in msg.body():
                msg_type = MsgType(raw_type)
                handler = self.handlers.get(msg_type)
                if handler is None or msg_type is MsgType.BATCH:
                    continue
                handler(Message(msg_type, rid, [body]))
                if not self.running:
                    break
        finally:
            self._flush_batch(msg)
            self.batch_out = None

    def _flush_batch(self, msg: Message) -> None:
        items, self.batch_out = self.batch_out, []
        if not items:
            return
        if len(items) == 1:
            raw_type, rid, body = items[0]
            frames, msg_type = [body], MsgType(raw_type)
        else:
            rid, frames, msg_type = 0, serialization.dumps(items), MsgType.BATCH
        self._send(msg_type, rid, frames, self.reply_route)

    def on_delete(self, msg: Message) -> None:
        self.running = False  # first: a client that closed its stream right after DELETE is not "gone"
        self._reply(msg, None)
