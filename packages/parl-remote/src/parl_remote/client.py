"""The client: the user's process after ``connect()``.

``connect(address)`` joins a running cluster; ``connect()`` without an address starts an embedded
local cluster (master and worker on loopback, one CPU per core) owned by this process and stopped at
exit. The client registers with the master, heartbeats it from a background thread (re-registering
after a master restart), asks it for a job per actor, and then talks to each actor's job directly.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import pathlib
import socket
import sys
import threading
import time
import uuid
import weakref
from typing import Any

import cloudpickle
import zmq

from parl_remote import config, files
from parl_remote.actor import ActorConnection, Reactor
from parl_remote.errors import (
    ActorDiedError,
    AuthenticationError,
    ClusterConnectionError,
    RemoteError,
    ResourceError,
    VersionMismatchError,
)
from parl_remote.transport import unix, zmq_io
from parl_remote.wire import protocol, serialization, shm
from parl_remote.wire.protocol import MsgType

logger = logging.getLogger(__name__)

_CLASS_CACHE: dict[type, tuple[Any, bytes | None]] = {}


def _importable_remotely(module: Any) -> bool:
    """True when a job can import ``module`` itself: shipped with the entry directory, or installed."""
    path = getattr(module, "__file__", None)
    if not path:
        return False
    resolved = pathlib.Path(path).resolve()
    entry = files.entry_directory()
    if entry is not None and entry in resolved.parents:
        return True
    prefixes = {pathlib.Path(p).resolve() for p in (sys.prefix, sys.base_prefix)}
    if any(p in resolved.parents for p in prefixes):
        return True
    top = module.__name__.partition(".")[0]
    return top in _installed_top_levels()


_TOP_LEVELS: set[str] | None = None


def _installed_top_levels() -> set[str]:
    global _TOP_LEVELS
    if _TOP_LEVELS is None:
        import importlib.metadata

        _TOP_LEVELS = set(importlib.metadata.packages_distributions())
    return _TOP_LEVELS


def parse_address(address: str) -> tuple[str, int]:
    """Splits ``"host:port"``.

    Raises:
        ValueError: not of the form ``host:port`` with an integer port.
    """
    if not isinstance(address, str) or ":" not in address:
        raise ValueError(f"address must be 'host:port' (e.g. 'localhost:8010'), got {address!r}")
    host, _, port = address.rpartition(":")
    try:
        return host or "127.0.0.1", int(port)
    except ValueError:
        raise ValueError(f"address must be 'host:port' with an integer port, got {address!r}") from None


def resolve_token(address: str, token: str | None) -> str:
    """The token for a cluster: ``token`` argument, else ``$XPARL_TOKEN``, else the local token file.

    Raises:
        AuthenticationError: no token found.
    """
    if token:
        return token
    env = os.environ.get("XPARL_TOKEN")
    if env:
        return env
    _, port = parse_address(address)
    path = config.state_dir() / "clusters" / str(port) / "token"
    if path.exists():
        return path.read_text().strip()
    raise AuthenticationError(
        f"no token for the cluster at {address}: pass connect(address, token=...), set XPARL_TOKEN, or run "
        f"this on the machine that ran `xparl start` (it stores the token in {path})"
    )


class MasterConnection:
    """A request/reply channel to the master over a DEALER socket (thread-safe, with timeouts)."""

    def __init__(self, ctx: zmq.Context, address: str, signer: protocol.Signer) -> None:
        self.address = address
        self.signer = signer
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://{address}")
        self.lock = threading.Lock()
        self.ids = itertools.count(1)

    def request(self, msg_type: MsgType, body: Any, timeout_s: float | None = None) -> tuple[MsgType, Any]:
        """Sends a request and returns ``(reply type, reply body)``.

        Raises:
            ClusterConnectionError: no reply within ``timeout_s`` (default ``MASTER_TIMEOUT_S``).
            AuthenticationError / VersionMismatchError: the master refused this process.
        """
        timeout_s = config.get("MASTER_TIMEOUT_S") if timeout_s is None else timeout_s
        with self.lock:
            rid = next(self.ids)
            zmq_io.send(self.sock, self.signer, msg_type, rid, body)
            deadline = time.monotonic() + timeout_s
            while True:
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms <= 0 or not self.sock.poll(left_ms):
                    raise ClusterConnectionError(
                        f"the xparl master at {self.address} did not answer within {timeout_s:g} s: check the "
                        f"address, start a cluster with `xparl start --port {self.address.rpartition(':')[2]}`, "
                        "or check the firewall"
                    )
                frames = zmq_io.recv_frames(self.sock)
                try:
                    msg = protocol.decode(self.signer, frames, has_identity=False)
                except protocol.Notice as notice:
                    if notice.type is MsgType.VERSION_MISMATCH:
                        raise VersionMismatchError(
                            f"the cluster at {self.address} refused this client: {notice.text}"
                        ) from None
                    raise AuthenticationError(
                        f"the cluster at {self.address} refused this client's token ({notice.text}); pass the "
                        "cluster's token: connect(address, token=...) or XPARL_TOKEN, as printed by `xparl start`"
                    ) from None
                except protocol.Rejected as exc:
                    logger.warning("dropped a message from the master: %s", exc)
                    continue
                if msg.req_id == rid:
                    return msg.type, msg.body()

    def close(self) -> None:
        with self.lock:
            self.sock.close(linger=0)


class Client:
    """A connection of this process to a cluster. Use ``connect()`` rather than this class directly.

    Args:
        address: ``host:port`` of the master.
        token: the cluster token (see ``resolve_token``).
        distributed_files: extra file globs to ship to the jobs.
        forward_output: print the actors' output on this console, prefixed by actor name and pid.
        resource_wait_s: how long actor creation waits for a free CPU (default ``RESOURCE_WAIT_S``).
        embedded: the local cluster this client owns and stops on ``disconnect``.

    Raises:
        ClusterConnectionError, AuthenticationError, VersionMismatchError: see ``connect``.
    """

    def __init__(
        self,
        address: str,
        token: str,
        distributed_files: tuple[str, ...] = (),
        *,
        forward_output: bool = True,
        resource_wait_s: float | None = None,
        embedded: Any = None,
    ) -> None:
        self.address = address
        self.signer = protocol.Signer(token)
        self.token = token
        self.client_id = "c-" + uuid.uuid4().hex[:12]
        self.pid = os.getpid()
        self.forward_output = forward_output
        self.resource_wait_s = config.get("RESOURCE_WAIT_S") if resource_wait_s is None else float(resource_wait_s)
        self.embedded = embedded
        self.distributed_files = tuple(distributed_files)
        self._files: tuple[str, dict[str, bytes]] | None = None
        self.ctx = zmq.Context()
        self.master = MasterConnection(self.ctx, address, self.signer)
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

    def _class_parts(self, cls: type) -> tuple[Any, bytes | None]:
        """How the class travels: ``(module, qualname)`` when the job can import it, else by value.

        A class is sent by reference when its module is shipped (under the entry script's directory) or
        installed (site-packages, or an installed distribution's package); otherwise its whole module is
        pickled by value with cloudpickle (classes in ``__main__``, notebooks, test modules, local files).
        """
        cached = _CLASS_CACHE.get(cls)
        if cached is not None:
            return cached
        module = sys.modules.get(cls.__module__)
        ref = None
        if module is not None and cls.__module__ != "__main__" and "<locals>" not in cls.__qualname__:
            if _importable_remotely(module):
                ref = (cls.__module__, cls.__qualname__)
        blob = None
        if ref is None:
            by_value = module is not None and cls.__module__ != "__main__" and getattr(module, "__file__", None)
            if by_value:
                cloudpickle.register_pickle_by_value(module)
            try:
                blob = serialization.dumps_code(cls)
            finally:
                if by_value:
                    cloudpickle.unregister_pickle_by_value(module)
        _CLASS_CACHE[cls] = (ref, blob)
        return ref, blob

    def _acquire(self, class_name: str, max_memory_mb: float | None, n_gpu: int) -> dict:
        deadline = time.monotonic() + self.resource_wait_s
        delay_s = 0.01
        warned = False
        while True:
            kind, body = self.master.request(
                MsgType.ACQUIRE_JOB,
                {"client_id": self.client_id, "class_name": class_name, "max_memory_mb": max_memory_mb, "n_gpu": n_gpu},
            )
            if kind is MsgType.REPLY:
                return body
            if kind is MsgType.NO_RESOURCE and body.get("kind") == "gpu":
                raise ResourceError(
                    f"this cluster schedules CPUs only; {class_name} asks for n_gpu={n_gpu}. Use n_gpu=0 and pick the "
                    "device inside the actor (e.g. CUDA_VISIBLE_DEVICES)"
                )
            if kind is not MsgType.NO_RESOURCE:
                raise RemoteError(f"unexpected answer from the master: {kind.name} {body!r}")
            if time.monotonic() >= deadline:
                raise ResourceError(
                    f"no free CPU for a {class_name} actor after waiting {self.resource_wait_s:g} s: the cluster at "
                    f"{self.address} has {body['total']} CPUs on {body['workers']} workers, {body['used']} in use. "
                    f"Delete unused actors, or add CPUs: `xparl connect --address {self.address} --cpu-num N` "
                    "on another machine (or restart with a larger --cpu-num)"
                )
            if not warned and time.monotonic() + 5 < deadline and delay_s >= 0.2:
                logger.info("no vacant CPU yet for %s; waiting up to %.0f s", class_name, self.resource_wait_s)
                warned = True
            time.sleep(delay_s)
            delay_s = min(delay_s * 2, 0.2)

    def create_actor(self, cls: type, args: tuple, kwargs: dict, options: dict) -> ActorConnection:
        """Creates a remote instance of ``cls`` (see ``remote_class``) and returns its connection.

        Raises:
            SerializationError: an argument cannot be pickled (nothing is sent).
            ResourceError: no free CPU within the wait.
            RemoteError: ``__init__`` raised on the actor (also an instance of the original type).
            ActorDiedError: the job died during ``__init__``.
        """
        if self.closed:
            raise ClusterConnectionError("this client is disconnected; call parl.connect(...) again")
        args_payload_check = serialization.check_arguments(f"{cls.__name__}.__init__", args, kwargs)
        del args_payload_check
        class_ref, class_blob = self._class_parts(cls)
        files_hash, bundle = self._files_bundle()
        forward = options.get("forward_output", self.forward_output)
        init_body = {
            "class_ref": class_ref,
            "class_blob": class_blob,
            "files_hash": files_hash,
            "args": (args, kwargs),
            "forward_output": forward,
            "host_id": shm.host_id() if shm.available() else "",
        }
        for attempt in range(3):
            grant = self._acquire(cls.__name__, options.get("max_memory"), options.get("n_gpu", 0))
            actor = ActorConnection(self, grant, cls.__name__, forward)
            try:
                payload = serialization.dumps({**init_body, "actor_id": grant["actor_id"]})
                reply = actor.request(MsgType.INIT, payload)
                if reply.type is MsgType.NEED_FILES:
                    files_payload = serialization.dumps({"files_hash": files_hash, "files": bundle})
                    actor.result_of(actor.request(MsgType.FILES, files_payload))
                    reply = actor.request(MsgType.INIT, payload)
                info = actor.result_of(reply)
                actor.same_host = shm.available() and bool(info.get("host_id")) and info["host_id"] == shm.host_id()
                if actor.same_host:
                    actor.shm_channel = shm.Channel()
                    moved = bool(info.get("unix")) and unix.enabled() and actor.use_stream(info["unix"])
                    if not moved and info.get("ipc"):
                        actor.use_endpoint(info["ipc"])
                break
            except ActorDiedError:
                actor.close()
                if actor.ever_connected or attempt == 2:
                    raise
                logger.info("the job granted for %s was gone before it answered; asking for another", cls.__name__)
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

    def death_cause(self, actor_id: str, wait_s: float = 1.0) -> str | None:
        """Asks the master why an actor ended, for up to ``wait_s`` (None if unknown or no answer)."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not self.closed:
            try:
                kind, info = self.master.request(MsgType.ACTOR_INFO, {"actor_id": actor_id}, timeout_s=0.5)
            except RemoteError:
                return None
            if kind is MsgType.REPLY and info and info.get("state") == "dead":
                return info.get("death_cause")
            time.sleep(0.05)
        return None

    def close(self) -> None:
        """Deletes this client's actors, says goodbye to the master and stops the embedded cluster."""
        if self.closed:
            return
        self.closed = True
        for actor in list(self.actors):
            try:
                actor.close()
            except Exception:
                logger.debug("closing an actor failed", exc_info=True)
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


_GLOBAL_CLIENT: Client | None = None
_GLOBAL_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


def connect(
    address: str | None = None,
    distributed_files: tuple[str, ...] | list[str] = (),
    token: str | None = None,
    *,
    forward_output: bool = True,
    resource_wait_s: float | None = None,
    cpu_num: int | None = None,
) -> Client:
    """Connects this process to an xparl cluster (PARL's ``parl.connect``).

    Args:
        address: ``"host:port"`` of a running cluster's master. None starts an embedded local cluster
            (master and worker on 127.0.0.1, ``cpu_num`` CPUs, default one per core) that this process
            owns and stops at exit.
        distributed_files: glob patterns of extra files the actors need (data, configs, packages outside
            the script's directory). The ``*.py`` files and sub-packages of the entry script's
            directory are shipped automatically. Shipped once per content hash and cached by workers.
        token: the cluster token; default ``$XPARL_TOKEN`` or the token file ``xparl start`` wrote.
        forward_output: print actors' stdout/stderr here, prefixed with the actor's name and pid
            (always written to each actor's log file as well).
        resource_wait_s: how long creating an actor waits for a free CPU before ``ResourceError``.
        cpu_num: CPUs of the embedded cluster (only without ``address``).

    Returns:
        The process-wide client.

    Raises:
        ValueError: malformed address, or ``cpu_num`` given with an address.
        ClusterConnectionError: nothing answers at ``address`` within ``MASTER_TIMEOUT_S`` seconds.
        AuthenticationError: wrong or missing token.
        VersionMismatchError: the cluster runs another protocol or Python version.
    """
    global _GLOBAL_CLIENT, _ATEXIT_REGISTERED
    if isinstance(distributed_files, str):
        raise TypeError("distributed_files must be a list of glob patterns, e.g. ['data/*.csv']")
    with _GLOBAL_LOCK:
        if _GLOBAL_CLIENT is not None and _GLOBAL_CLIENT.pid == os.getpid() and not _GLOBAL_CLIENT.closed:
            same = _GLOBAL_CLIENT.address == address if address is not None else _GLOBAL_CLIENT.embedded is not None
            if same:
                logger.info("already connected to %s", _GLOBAL_CLIENT.address)
                return _GLOBAL_CLIENT
            _GLOBAL_CLIENT.close()
        _GLOBAL_CLIENT = None
        embedded = None
        if address is None:
            from parl_remote.cluster import LocalCluster

            embedded = LocalCluster(cpu_num=cpu_num, parent_pid=os.getpid())
            embedded.start()
            address, token = embedded.address, embedded.token
        elif cpu_num is not None:
            raise ValueError("cpu_num only applies to the embedded cluster (connect() without an address)")
        parse_address(address)
        try:
            client = Client(
                address,
                resolve_token(address, token),
                tuple(distributed_files),
                forward_output=forward_output,
                resource_wait_s=resource_wait_s,
                embedded=embedded,
            )
        except BaseException:
            if embedded is not None:
                embedded.stop()
            raise
        _GLOBAL_CLIENT = client
        if not _ATEXIT_REGISTERED:
            atexit.register(disconnect)
            _ATEXIT_REGISTERED = True
        return client


def get_global_client() -> Client:
    """The process's client (re-created in a forked child, as PARL does).

    Raises:
        ClusterConnectionError: ``connect()`` was not called in this process.
    """
    global _GLOBAL_CLIENT
    client = _GLOBAL_CLIENT
    if client is None or client.closed:
        raise ClusterConnectionError(
            "not connected: call parl.connect('host:port') (or parl.connect() for a local cluster) before "
            "creating a remote actor"
        )
    if client.pid != os.getpid():  # forked child: open our own sockets
        with _GLOBAL_LOCK:
            if _GLOBAL_CLIENT is client:
                _GLOBAL_CLIENT = Client(
                    client.address, client.token, client.distributed_files, forward_output=client.forward_output
                )
            client = _GLOBAL_CLIENT
    return client


def disconnect() -> None:
    """Deletes this process's actors, leaves the cluster and stops an embedded cluster. Idempotent."""
    global _GLOBAL_CLIENT
    with _GLOBAL_LOCK:
        client, _GLOBAL_CLIENT = _GLOBAL_CLIENT, None
    if client is not None and client.pid == os.getpid():
        client.close()
