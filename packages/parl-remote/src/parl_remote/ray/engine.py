"""The caller's side of the Ray engine: ``parl.connect("ray://HOST:10001")`` or ``parl.connect("ray")``.

``RayClient`` stands where the xparl ``Client`` stands (``get_global_client()`` returns it, and the proxies
that ``@remote_class`` makes call its ``create_actor``); ``RayActor`` stands where ``ActorConnection``
stands (``call`` / ``submit`` / ``get_attr`` / ``set_attr`` / ``close``). So user code does not change:

- every remote object is one Ray actor (``host.RayHost``) holding one CPU (``num_cpus=1``, PARL's one CPU per
  actor), ``n_gpu`` whole GPUs (``num_gpus``; Ray sets ``CUDA_VISIBLE_DEVICES``) and, with ``max_memory``, that
  much of Ray's ``memory`` resource plus the kill-on-growth rule of xparl;
- blocking methods are ``ray.get`` of the call; ``wait=False`` methods return a ``RemoteFuture`` completed by
  the Ray object ref (PARL's ``get`` and the ``concurrent.futures`` interface); calls from one caller run in
  order (Ray's ordering of an actor's tasks);
- a user exception comes back as its own type and as ``RemoteError`` (the actor lives on); a dead actor's
  calls raise ``ActorDiedError`` whose ``cause`` is Ray's; ``destroy()`` is ``ray.kill``;
- the entry script's directory and ``distributed_files`` become Ray's ``runtime_env`` ``working_dir`` (Ray
  uploads it once per content hash and caches it on each node); actors' stdout reaches this console the way
  Ray forwards it (``log_to_driver``).

Arguments go to Ray as top-level arguments of the actor call, so Ray treats them as it treats a plain Ray
actor's (large arrays through its object store, zero-copy on the node).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import weakref
from typing import Any

from parl_remote import config, files
from parl_remote.client.actor import close_actors
from parl_remote.client.classes import class_parts
from parl_remote.client.future import RemoteFuture
from parl_remote.errors import (
    ActorDiedError,
    ClusterConnectionError,
    MissingDependencyError,
    RemoteError,
    ResourceError,
    VersionMismatchError,
)
from parl_remote.ray.futures import RayFuture
from parl_remote.ray.translate import serialization_error, translate

logger = logging.getLogger(__name__)

MIN_RAY_VERSION = (2, 10)  # the Ray calls used here (ObjectRef.future, __ray_ready__, exit details) exist since
EXTRA = 'pip install "parl-remote[ray]"'


def import_ray() -> Any:
    """Imports Ray, checking its version.

    Raises:
        MissingDependencyError: Ray is not installed (names the extra to install).
        VersionMismatchError: Ray is older than ``MIN_RAY_VERSION``.
    """
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError(
            f"the Ray engine needs Ray, which is not installed here: {EXTRA} (or connect to an xparl cluster "
            "with parl.connect('HOST:PORT'))"
        ) from exc
    found = tuple(int(p) for p in re.findall(r"\d+", ray.__version__)[:2])
    if found < MIN_RAY_VERSION:
        need = ".".join(map(str, MIN_RAY_VERSION))
        raise VersionMismatchError(
            f"Ray {ray.__version__} is older than the engine supports (>= {need}); {EXTRA} --upgrade"
        )
    return ray


def _ray_target(address: str) -> str:
    """What ``ray.init`` is given: the Ray Client URL, ``$RAY_ADDRESS``, or ``"auto"`` (this machine's cluster)."""
    if address.startswith("ray://"):
        return address
    return os.environ.get("RAY_ADDRESS") or "auto"


def _check_reachable(target: str) -> None:
    """Fails within ``MASTER_TIMEOUT_S`` when nothing listens at a ``[ray://]HOST:PORT`` (Ray itself retries for
    much longer before it gives up)."""
    hostport = target[len("ray://"):] if target.startswith("ray://") else target
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        if target.startswith("ray://"):
            raise ValueError(f"malformed Ray address {target!r}; expected ray://HOST:PORT (Ray Client, port 10001)")
        return  # "auto", or a form Ray understands and we do not check
    timeout_s = config.get("MASTER_TIMEOUT_S")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ClusterConnectionError(
            f"nothing answers at the Ray address {target} ({exc}); start the cluster (ray start --head, or a "
            "KubeRay RayCluster) or fix the address"
        ) from None


# What Ray Client's proxy answers when the server it starts for a client failed to start (on a loaded head: seen on a
# 2-core machine, the next try succeeding): its own message, or its traceback through start_specific_server (the
# server process already a zombie when the proxy read its command line)
_SERVER_START_FAILED = ("Starting Ray client server failed", "start_specific_server")


def _init(ray: Any, target: str, forward_output: bool, runtime_env: dict) -> None:
    """``ray.init``, tried twice for Ray Client: its proxy starts a server per client and, on a loaded head, may
    report that start as failed once, though the next try succeeds."""
    for attempt in range(2):
        try:
            ray.init(address=target, log_to_driver=forward_output, runtime_env=runtime_env)
            return
        except (ConnectionError, RuntimeError) as exc:
            if attempt or not any(text in str(exc) for text in _SERVER_START_FAILED):
                raise ConnectionError(str(exc)) from exc
            logger.info("Ray Client's server did not start at the first try; trying again")


class RayClient:
    """This process's connection to a Ray cluster. Use ``parl.connect("ray...")`` rather than this directly.

    Args:
        address: ``"ray"`` (``$RAY_ADDRESS``, else the cluster of this machine) or ``"ray://HOST:PORT"``.
        distributed_files: globs of extra files the actors need (with the entry script's ``*.py`` files).
        forward_output: print the actors' output here (Ray's ``log_to_driver``).
        resource_wait_s: how long creating an actor waits for a free CPU / GPUs before ``ResourceError``.

    Raises:
        MissingDependencyError, VersionMismatchError: see ``import_ray``.
        ClusterConnectionError: nothing answers at the address, or Ray cannot connect.
        ValueError: a malformed address, or a ``distributed_files`` pattern that matches nothing.
    """

    engine = "ray"
    embedded = None  # the xparl Client's attribute: a Ray cluster is never owned by this process

    def __init__(self, address: str, distributed_files: tuple[str, ...] = (), *, forward_output: bool = True,
                 resource_wait_s: float | None = None) -> None:
        ray = self.ray = import_ray()
        self.address = address
        self.pid = os.getpid()
        self.closed = False
        self.forward_output = forward_output
        self.resource_wait_s = config.get("RESOURCE_WAIT_S") if resource_wait_s is None else float(resource_wait_s)
        self.actors: weakref.WeakSet[RayActor] = weakref.WeakSet()
        self.runtime_env: dict[str, Any] = {"env_vars": {"XPARL": "True"}}  # a decorated class is the class itself
        self.owns_ray = not ray.is_initialized()
        if not self.owns_ray:
            if distributed_files:  # Ray takes a local folder only in ray.init's runtime_env, which was the user's
                raise ValueError(
                    "distributed_files on a Ray connection this process opened itself (ray.init before parl.connect) "
                    "cannot be shipped: Ray uploads local folders only at ray.init. Call parl.connect('ray', "
                    "distributed_files=[...]) without ray.init, or pass runtime_env={'working_dir': ...} to ray.init"
                )
            logger.info("using this process's existing Ray connection (ray.init was called before parl.connect)")
        else:
            bundle = files.collect(tuple(distributed_files), files.entry_directory())
            if bundle:
                folder = files.extract(config.state_dir() / "cache" / "ray-working-dirs", files.bundle_hash(bundle),
                                       bundle)
                self.runtime_env["working_dir"] = str(folder)
            target = _ray_target(address)
            _check_reachable(target)
            try:
                _init(ray, target, forward_output, self.runtime_env)
            except ConnectionError as exc:
                raise ClusterConnectionError(
                    f"cannot connect to the Ray cluster at {target}: {exc}. Start one with `ray start --head` "
                    "(then parl.connect('ray')), set RAY_ADDRESS, or connect to ray://HOST:10001; with Ray's token "
                    "authentication, set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or ~/.ray/auth_token) as the "
                    "cluster has them"
                ) from exc
        self._host_classes: dict[type, tuple[Any, frozenset]] = {}

    def logs_url(self) -> None:
        """Actor logs are Ray's (its dashboard); None, as for an xparl cluster without a monitor."""
        return None

    # ---------------------------------------------------------------------------------- actors
    def create_actor(self, cls: type, args: tuple, kwargs: dict, options: dict) -> RayActor:
        """Creates a Ray actor holding an instance of ``cls`` (see ``remote_class``).

        Raises:
            SerializationError: the class or an argument cannot be pickled (names it; nothing is created).
            ResourceError: no node has ``n_gpu`` GPUs (at once), or no free CPU / GPUs within the wait.
            RemoteError: ``__init__`` raised (also an instance of the original type); the actor is removed.
            ActorDiedError: the actor died while being built.
        """
        ray = self.ray
        if self.closed:
            raise ClusterConnectionError("this client is disconnected; call parl.connect(...) again")
        n_gpu, max_memory = options.get("n_gpu", 0), options.get("max_memory")
        self._check_feasible(n_gpu)
        # the entry directory reaches the actors only as ray.init's working_dir: else its classes go by value
        class_ref, class_blob = class_parts(cls, entry_shipped="working_dir" in self.runtime_env)
        ray_options: dict[str, Any] = {"num_cpus": 1, "num_gpus": n_gpu}
        if max_memory:
            ray_options["memory"] = int(max_memory * 2**20)
        if not self.owns_ray:  # ray.init was the user's: XPARL=True goes per actor
            ray_options["runtime_env"] = self.runtime_env
        host_class, forwarded = self._host_class(cls)
        handle = host_class.options(**ray_options).remote(cls.__name__)
        ready, _ = ray.wait([handle.__ray_ready__.remote()], timeout=self.resource_wait_s)
        if not ready:
            ray.kill(handle)
            raise ResourceError(self._capacity_message(cls.__name__, n_gpu))
        where = f"actor {cls.__name__} {handle._actor_id.hex()[:12]} (Ray)"
        try:
            ref = handle.construct.remote(class_ref, class_blob, args, kwargs, max_memory, n_gpu)
        except Exception as exc:
            ray.kill(handle)
            raise serialization_error(f"{cls.__name__}.__init__", args, kwargs, exc) from exc
        try:
            info = ray.get(ref)
        except BaseException as exc:
            ray.kill(handle)
            raise translate(ray, exc, where) from None
        actor = RayActor(self, handle, info, cls.__name__, forwarded)
        self.actors.add(actor)
        return actor

    def _host_class(self, cls: type) -> tuple[Any, frozenset]:
        """The Ray actor class of ``cls``'s remote objects (``host.host_class_for``) and the methods it forwards,
        made once per class."""
        made = self._host_classes.get(cls)
        if made is None:
            from parl_remote.ray.host import host_class_for

            host = host_class_for(cls)
            made = self._host_classes[cls] = (self.ray.remote(host), host.FORWARDED)
        return made

    def _check_feasible(self, n_gpu: int) -> None:
        if not n_gpu:  # a CPU actor: nothing to ask the cluster (ray.nodes() is a round trip to its GCS)
            return
        nodes = [n.get("Resources", {}) for n in self.ray.nodes() if n.get("Alive")]
        if not any(r.get("GPU", 0) >= n_gpu for r in nodes):
            per_node = sorted(int(r.get("GPU", 0)) for r in nodes)
            raise ResourceError(
                f"@remote_class(n_gpu={n_gpu}), but no node of the Ray cluster at {self.address} has that many GPUs "
                f"(GPUs per node: {per_node}); add a node with `ray start --num-gpus {n_gpu} --address ...` or ask "
                "for fewer"
            )

    def _capacity_message(self, class_name: str, n_gpu: int) -> str:
        total, free = self.ray.cluster_resources(), self.ray.available_resources()
        need = "CPU" + (f" and {n_gpu} GPUs" if n_gpu else "")
        return (
            f"no free {need} for {class_name} within {self.resource_wait_s:g} s on the Ray cluster at {self.address} "
            f"(CPUs: {free.get('CPU', 0):g} free of {total.get('CPU', 0):g}; GPUs: {free.get('GPU', 0):g} free of "
            f"{total.get('GPU', 0):g}); add nodes (`ray start --address ...`), end actors you no longer need "
            "(destroy()), or wait longer with connect(..., resource_wait_s=...)"
        )

    def close(self) -> None:
        """Ends this client's actors and, when ``connect`` started the Ray connection, ``ray.shutdown()``."""
        if self.closed:
            return
        self.closed = True
        close_actors(self.actors)
        if self.owns_ray:
            self.ray.shutdown()


class RayActor:
    """The caller's end of one remote object on Ray (the interface of ``ActorConnection``)."""

    def __init__(self, client: RayClient, handle: Any, info: dict, class_name: str,
                 forwarded: frozenset = frozenset()) -> None:
        self.ray = client.ray
        self.handle = handle
        self._call = handle.call  # the actor methods, looked up once (a handle builds one per attribute access)
        self._methods = {name: getattr(handle, name) for name in forwarded}
        self.actor_id: str = handle._actor_id.hex()
        self.pid: int = info["pid"]
        self.address: str = info["host"]
        self.class_name = class_name
        self.shadowed = frozenset(info.get("shadowed", ()))
        self.where = f"actor {class_name} {self.actor_id[:12]}, pid {self.pid} on {self.address} (Ray)"
        self.closed = False
        self.dead: ActorDiedError | None = None

    def _send(self, method: Any, label: str, args: tuple, kwargs: dict, prefix: tuple = ()) -> Any:
        """``method.remote(*prefix, *args, **kwargs)``; names an argument Ray cannot serialise."""
        if self.closed:
            raise RemoteError(f"{self.where} was deleted")
        try:
            return method.remote(*prefix, *args, **kwargs)
        except Exception as exc:
            raise serialization_error(label, args, kwargs, exc) from exc

    def _send_call(self, name: str, args: tuple, kwargs: dict) -> Any:
        """Starts ``name(*args, **kwargs)``: through the actor method of that name when the host class has one,
        else through the generic ``call``."""
        method = self._methods.get(name)
        if method is None:
            return self._send(self._call, name, args, kwargs, (name,))
        return self._send(method, name, args, kwargs)

    def _get(self, ref: Any) -> Any:
        try:
            return self.ray.get(ref)
        except BaseException as exc:
            raise self._translate(exc) from None

    def _translate(self, exc: BaseException) -> BaseException:
        error = translate(self.ray, exc, self.where)
        if isinstance(error, ActorDiedError):  # the first death found is the one every later call reports
            if self.dead is None:
                self.dead = self._own_reason(error)
            return ActorDiedError(str(self.dead), cause=self.dead.cause)
        return error

    def _own_reason(self, error: ActorDiedError) -> ActorDiedError:
        """The reason the actor gave itself before ending (max_memory), else Ray's."""
        from parl_remote.ray.host import KV_NAMESPACE, death_key

        try:
            from ray.experimental import internal_kv

            key = death_key(self.actor_id)
            reason = internal_kv._internal_kv_get(key, namespace=KV_NAMESPACE)
            if reason:
                internal_kv._internal_kv_del(key, namespace=KV_NAMESPACE)
                cause = reason.decode()
                return ActorDiedError(f"{self.where} died: {cause}", cause=cause)
        except Exception:
            logger.debug("cannot read an actor's own reason from Ray's key-value store", exc_info=True)
        return error

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        """Calls a method and returns its result (blocking mode)."""
        return self._get(self._send_call(name, args, kwargs))

    def submit(self, name: str, args: tuple, kwargs: dict) -> RemoteFuture:
        """Starts a method call and returns its future (future mode)."""
        return RayFuture(self._send_call(name, args, kwargs), self.ray, self._translate)

    def get_attr(self, name: str) -> Any:
        """Reads an attribute of the remote object."""
        return self._get(self._send(self.handle.get_attr, "get_attr", (name,), {}))

    def set_attr(self, name: str, value: Any) -> None:
        """Sets an attribute of the remote object."""
        self._get(self._send(self.handle.set_attr, f"setting attribute {name}", (value,), {}, (name,)))

    def close(self) -> None:
        """Ends the Ray actor (``ray.kill``). Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.ray.is_initialized():
            self.ray.kill(self.handle)
