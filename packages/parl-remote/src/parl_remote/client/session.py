"""The client: the user's process after ``connect()`` (``connection.py``).

``connect(address)`` joins a running cluster; ``connect()`` without an address starts an embedded
local cluster (master and worker on loopback, one CPU per core) owned by this process and stopped at
exit. The client registers with the master, heartbeats it from a background thread (re-registering
after a master restart), asks it for a job per actor, and then talks to each actor's job directly.
"""

from __future__ import annotations

import itertools
import logging
import os
import pickle
import socket
import sys
import threading
import time
import uuid
import weakref
from typing import Any

import zmq

from parl_remote import config, files
from parl_remote.client.acquire import acquire
from parl_remote.client.actor import ActorConnection, close_actors
from parl_remote.client.classes import class_parts
from parl_remote.client.master_link import MasterConnection
from parl_remote.client.reactor import Reactor
from parl_remote.errors import (
    ActorDiedError,
    ClusterConnectionError,
    RemoteError,
    VersionMismatchError,
)
from parl_remote.transport import unix
from parl_remote.wire import serialization, shm, shm_arena
from parl_remote.wire.protocol import MsgType
from parl_remote.wire.signing import Signer

logger = logging.getLogger(__name__)


class Client:
    """A connection of this process to a cluster. Use ``connect()`` rather than this class directly.

    Args:
        address: ``host:port`` of the master.
        token: the cluster token (see ``resolve_token``).
        distributed_files: extra file globs to ship to the jobs.
        forward_output: print the actors' output on this console, prefixed by actor name and pid.
        resource_wait_s: how long actor creation waits for a free CPU (default ``RESOURCE_WAIT_S``).
        embedded: the local cluster this client owns and stops on ``disconnect``.
        token_source: where the token came from, named if the master refuses it (``token_source``).

    Raises:
        ClusterConnectionError, AuthenticationError, VersionMismatchError: see ``connect``.
    """

    engine = "xparl"  # RayClient's is "ray" (client/connection.py picks one by address)

    def __init__(
        self,
        address: str,
        token: str,
        distributed_files: tuple[str, ...] = (),
        *,
        forward_output: bool = True,
        resource_wait_s: float | None = None,
        embedded: Any = None,
        token_source: str = "",
    ) -> None:
        self.address = address
        self.signer = Signer(token)
        self.token = token
        self.client_id = "c-" + uuid.uuid4().hex[:12]
        self.pid = os.getpid()
        self.forward_output = forward_output
        self.resource_wait_s = config.get("RESOURCE_WAIT_S") if resource_wait_s is None else float(resource_wait_s)
        self.embedded = embedded
        self.token_source = token_source
        self.monitor_port: int | None = None  # the cluster's web monitor, from the master's registration reply
        self.distributed_files = tuple(distributed_files)
        self._files: tuple[str, dict[str, bytes]] | None = None
        self.ctx = zmq.Context()
        self.master = MasterConnection(self.ctx, address, self.signer, self.token_source)
        self.started_at = time.time()
        self.actors: weakref.WeakSet[ActorConnection] = weakref.WeakSet()
        self.reactor: Reactor | None = None
        self.reactor_lock = threading.Lock()
        self.closed = False
        try:
            self._register(self.master)
        except BaseException:
            self.master.close()
            self.ctx.term()
            raise
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, name="xparl-client-heartbeat", daemon=True)
        self._heartbeat.start()

    def _registration(self) -> dict:
        main = sys.modules.get("__main__")
        return {
            "client_id": self.client_id,
            "host": socket.gethostname(),
            "pid": self.pid,
            "script": os.path.abspath(getattr(main, "__file__", "") or "<interactive>"),
            "started_at": self.started_at,
            "python": list(sys.version_info[:2]),
            "actors": [a.actor_id for a in list(self.actors) if a.dead is None and not a.closed],
        }

    def _register(self, conn: MasterConnection) -> None:
        kind, body = conn.request(MsgType.CLIENT_REGISTER, self._registration())
        if kind is MsgType.ERROR:
            raise VersionMismatchError(body.get("message", str(body)))
        self.monitor_port = body.get("monitor_port") if isinstance(body, dict) else None

    @property
    def actor_num(self) -> int:
        """How many of this client's actors are alive now (PARL's ``Client.actor_num``): an actor that died
        (killed, over ``max_memory``, its worker lost) or was deleted no longer counts. PARL's programs poll it
        to replace lost actors."""
        return sum(1 for a in list(self.actors) if a.dead is None and not a.closed)

    def logs_url(self) -> str | None:
        """The monitor page of this client's actors and their logs (PARL prints one at ``connect``), or None
        when the cluster runs no monitor."""
        if not self.monitor_port:
            return None
        return f"http://{self.address.rpartition(':')[0]}:{self.monitor_port}/clients/{self.client_id}"

    def _heartbeat_loop(self) -> None:
        conn = MasterConnection(self.ctx, self.address, self.signer)
        interval_s = config.get("CLIENT_HEARTBEAT_INTERVAL_S")
        try:
            while not self._stop.wait(interval_s):
                try:
                    kind, _ = conn.request(
                        MsgType.CLIENT_HEARTBEAT, {"client_id": self.client_id}, timeout_s=interval_s * 3
                    )
                    if kind is MsgType.REREGISTER:
                        self._register(conn)
                except ClusterConnectionError:
                    logger.debug("master %s not answering heartbeats", self.address)
                    conn.close()
                    conn = MasterConnection(self.ctx, self.address, self.signer)
                except Exception:
                    logger.debug("client heartbeat failed", exc_info=True)
        finally:
            conn.close()

    # ---------------------------------------------------------------------------------- actors
    def _files_bundle(self) -> tuple[str, dict[str, bytes]]:
        if self._files is None:
            bundle = files.collect(self.distributed_files, files.entry_directory())
            self._files = (files.bundle_hash(bundle) if bundle else "", bundle)
        return self._files

    def create_actor(self, cls: type, args: tuple, kwargs: dict, options: dict) -> ActorConnection:
        """Creates a remote instance of ``cls`` (see ``remote_class``) and returns its connection.

        Raises:
            SerializationError: an argument cannot be pickled (nothing is sent).
            ResourceError: no free CPU (or no ``n_gpu`` free GPUs) within the wait, or no worker has ``n_gpu`` GPUs.
            RemoteError: ``__init__`` raised on the actor (also an instance of the original type).
            ActorDiedError: the job died during ``__init__``.
        """
        if self.closed:
            raise ClusterConnectionError("this client is disconnected; call parl.connect(...) again")
        # pickled once, here (naming an argument that cannot be pickled before anything is sent); the INIT body
        # carries the frames (its large buffers out of band again, without a copy)
        args_frames = serialization.check_arguments(f"{cls.__name__}.__init__", args, kwargs)
        class_ref, class_blob = class_parts(cls)
        files_hash, bundle = self._files_bundle()
        forward = options.get("forward_output", self.forward_output)
        init_body = {
            "class_ref": class_ref,
            "class_blob": class_blob,
            "files_hash": files_hash,
            "args": [args_frames[0], *map(pickle.PickleBuffer, args_frames[1:])],
            "forward_output": forward,
            "host_id": shm.host_id() if shm.available() else "",
        }
        proof = shm.write_proof()  # the job reads its nonce if it shares this /dev/shm
        init_body["shm_proof"] = list(proof) if proof else None
        try:
            return self._create_actor(cls, options, init_body, files_hash, bundle, forward)
        finally:
            shm.remove_proof(proof)

    def _create_actor(self, cls: type, options: dict, init_body: dict, files_hash: str, bundle: dict[str, bytes],
                      forward: bool) -> ActorConnection:
        """``create_actor`` once its INIT body is built (see there)."""
        # A granted job can be dead before it answers (killed while idle, before its worker told the master): such
        # a grant is dropped and another job asked for, until the resource wait ends (an actor never gets it).
        deadline = time.monotonic() + self.resource_wait_s
        for attempt in itertools.count():
            grant = acquire(self, cls.__name__, options.get("max_memory"), options.get("n_gpu", 0))
            actor = ActorConnection(self.ctx, self.signer, self.death_cause, grant, cls.__name__, forward)
            try:
                payload = serialization.dumps({**init_body, "actor_id": grant["actor_id"],
                                               "cuda_visible_devices": grant.get("cuda_visible_devices")})
                reply = actor.request(MsgType.INIT, payload)
                if reply.type is MsgType.NEED_FILES:
                    files_payload = serialization.dumps({"files_hash": files_hash, "files": bundle})
                    actor.result_of(actor.request(MsgType.FILES, files_payload))
                    reply = actor.request(MsgType.INIT, payload)
                info = actor.result_of(reply)
                actor.check_liveness()  # reads the connection's events: its TCP options are set once it is up
                actor.shadowed = frozenset(info.get("shadowed", ()))
                if info.get("shared_shm") and info.get("host_id") == shm.host_id():  # the job read our nonce
                    actor.use_shared_memory(shm_arena.Channel())
                    # the job's abstract sockets answer only within its network namespace: reaching one proves it
                    moved = bool(info.get("unix")) and unix.enabled() and actor.use_stream(info["unix"])
                    if not moved and info.get("ipc") and unix.abstract_reachable(info["ipc"]):
                        actor.use_endpoint(info["ipc"])
                break
            except ActorDiedError:
                actor.close()
                if (actor.ever_connected and not self._never_assigned(grant["actor_id"])) or \
                        time.monotonic() >= deadline:
                    raise
                logger.info("the job granted for %s was gone before it answered (try %d); asking for another",
                            cls.__name__, attempt + 1)
            except BaseException:
                actor.close()
                raise
        self.actors.add(actor)
        if not options.get("wait", True):
            self._get_reactor().adopt(actor)
        return actor

    def _get_reactor(self) -> Reactor:
        with self.reactor_lock:
            if self.reactor is None:
                self.reactor = Reactor()
                self.reactor.start()
            return self.reactor

    def _never_assigned(self, actor_id: str) -> bool:
        """True when the master says the actor's job had ended before it was assigned (no user code ran there).

        A job killed while idle can still accept a connection for a moment, so ``ever_connected`` alone does not
        prove that it received ``__init__``; its worker's report does.
        """
        try:
            kind, info = self.master.request(MsgType.ACTOR_INFO, {"actor_id": actor_id}, timeout_s=0.5)
        except RemoteError:
            return False
        return kind is MsgType.REPLY and bool(info) and bool(info.get("never_assigned"))

    def death_cause(self, actor_id: str, wait_s: float = 1.0) -> str | None:
        """Asks the master why an actor ended, for up to ``wait_s`` (None if unknown or no answer). An actor the
        master lists ``unreachable`` (its worker fell silent) is answered at once: its job's connection is gone
        and its worker is not heard, so no better cause will come."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not self.closed:
            try:
                kind, info = self.master.request(MsgType.ACTOR_INFO, {"actor_id": actor_id}, timeout_s=0.5)
            except RemoteError:
                return None
            if kind is MsgType.REPLY and info and info.get("state") == "dead":
                return info.get("death_cause")
            if kind is MsgType.REPLY and info and info.get("state") == "unreachable":
                return (f"its worker {info.get('worker_id')} on {info.get('host')} stopped answering the master "
                        "(the worker was killed, or its machine or the link to it was lost)")  # fmt: skip
            time.sleep(0.05)
        return None

    def close(self) -> None:
        """Deletes this client's actors, says goodbye to the master and stops the embedded cluster."""
        if self.closed:
            return
        self.closed = True
        close_actors(self.actors)
        if self.reactor is not None:
            self.reactor.stop()
        self._stop.set()
        self._heartbeat.join(timeout=5)
        try:
            self.master.request(MsgType.CLIENT_BYE, {"client_id": self.client_id}, timeout_s=1.0)
        except RemoteError:
            pass
        self.master.close()
        self.ctx.term()
        if self.embedded is not None:
            self.embedded.stop()
