"""The actor Ray runs for every ``@remote_class`` instance on a Ray cluster: what a job is on xparl.

``engine.py`` wraps ``RayHost`` with ``ray.remote`` (Ray imports this module by reference on its workers,
which have ``parl-remote`` installed). ``__init__`` does nothing, so Ray's creation task finishing means only
that the actor holds its resources (CPU, GPUs, memory); ``construct`` then loads the user's class the way an
xparl job does (by reference under ``XPARL=True``, so a decorated class is the class itself, else by value)
and builds the object, so an exception in the user's ``__init__`` reaches the caller as its own type.
Methods go through one actor method per user method (``host_class_for``; ``call`` for the rest), attribute
reads and writes through ``get_attr`` / ``set_attr``; a user exception is raised by Ray as a ``RayTaskError``
carrying it, and the actor stays alive (PARL's rule here as on xparl).

``max_memory``: a thread compares the process's resident memory with what it held right before the user's
class was built (PARL's rule, as xparl's worker does); past it, the actor leaves the reason in Ray's key-value
store (``death_key``), where the caller's ``ActorDiedError`` picks it up, and exits at once.
"""

from __future__ import annotations

import inspect
import logging
import os
import socket
import threading
import time
from typing import Any

logger = logging.getLogger(__name__)

MEMORY_CHECK_INTERVAL_S = 0.2  # how often the resident memory of an actor with max_memory is checked


class RayHost:
    """One remote object on a Ray worker. Driven by ``parl_remote.ray.engine.RayActor``."""

    FORWARDED: frozenset = frozenset()  # the methods a ``host_class_for`` subclass has an actor method for

    def __init__(self, class_name: str = "RayHost") -> None:
        self.class_name = class_name  # Ray reads __repr__ once the actor is created, before construct
        self.obj: Any = None

    def construct(self, class_ref: Any, class_blob: bytes | None, args: tuple, kwargs: dict,
                  max_memory_mib: float | None, n_gpu: int = 0) -> dict:
        """Builds the user's object; returns ``{"pid", "host", "shadowed"}``.

        Raises:
            whatever the class's ``__init__`` raises (re-raised on the caller as its own type), or
            ImportError when the class can be neither imported nor unpickled here.
        """
        from parl_remote.server.class_loading import load_class

        if not n_gpu and _node_has_gpus():  # PARL's (and xparl's) rule: a CPU actor sees no GPU; Ray leaves it all
            os.environ["CUDA_VISIBLE_DEVICES"] = ""

        cls = load_class(class_ref, class_blob)
        if max_memory_mib:
            import psutil

            base_mib = psutil.Process().memory_info().rss / 2**20
            threading.Thread(target=self._watch_memory, args=(float(max_memory_mib), base_mib),
                             name="parl-max-memory", daemon=True).start()
        self.obj = cls(*args, **kwargs)
        # instance attributes named like a method of the class: PARL (like Python) reads the attribute
        shadowed = [k for k in getattr(self.obj, "__dict__", {}) if callable(getattr(type(self.obj), k, None))]
        return {"pid": os.getpid(), "host": socket.gethostname(), "shadowed": shadowed}

    def __repr__(self) -> str:  # Ray prefixes the actor's output with this: the user's class, as xparl does
        return self.class_name

    def call(self, _xparl_method: str, *args: Any, **kwargs: Any) -> Any:
        """Calls a method of the object (arguments as top-level Ray arguments, as a plain Ray actor gets them)."""
        return getattr(self.obj, _xparl_method)(*args, **kwargs)

    def get_attr(self, name: str) -> Any:
        return getattr(self.obj, name)

    def set_attr(self, name: str, value: Any) -> None:
        setattr(self.obj, name, value)

    def _watch_memory(self, max_memory_mib: float, base_mib: float) -> None:
        import psutil

        from parl_remote.server.exits import max_memory_cause

        process = psutil.Process()
        while True:  # a daemon thread: it ends with the process
            time.sleep(MEMORY_CHECK_INTERVAL_S)
            rss_mib = process.memory_info().rss / 2**20
            if rss_mib > max_memory_mib + base_mib:
                self._exit(max_memory_cause(max_memory_mib, rss_mib, base_mib))

    @staticmethod
    def _exit(detail: str) -> None:
        """Ends this actor now, leaving ``detail`` where its callers' ``ActorDiedError`` finds it (Ray's key-value
        store, ``death_key``): Ray's own exit path with a reason waits for the running method to finish."""
        logger.error("ending the actor: %s", detail)
        try:
            import ray
            from ray.experimental import internal_kv

            internal_kv._internal_kv_put(death_key(ray.get_runtime_context().get_actor_id()), detail.encode(),
                                         namespace=KV_NAMESPACE)
        except Exception:  # the reason stays in this actor's log
            logger.exception("cannot record the reason in Ray's key-value store")
        finally:
            os._exit(1)


KV_NAMESPACE = "parl"
_HOST_CLASSES: dict[type, type] = {}


def host_class_for(cls: type) -> type:
    """A ``RayHost`` subclass with one actor method per plain method of ``cls``, of the same name and signature,
    that calls it on the object: Ray then binds and ships a call's arguments exactly as for a plain Ray actor of
    ``cls`` (the generic ``call(name, *args, **kwargs)`` costs a name argument and a varargs binding per call).
    Static / class methods and names of ``RayHost``'s own go through ``call``. Made once per class."""
    made = _HOST_CLASSES.get(cls)
    if made is not None:
        return made
    namespace: dict[str, Any] = {"__module__": __name__, "__qualname__": f"RayHost[{cls.__qualname__}]"}
    for name in dir(cls):
        static = inspect.getattr_static(cls, name, None)
        if not inspect.isfunction(static) or name.startswith("_") or hasattr(RayHost, name):
            continue
        try:
            namespace[name] = _forwarder(name, inspect.signature(static))
        except (TypeError, ValueError):  # no signature to copy: the generic call serves it
            continue
    namespace["FORWARDED"] = frozenset(n for n in namespace if not n.startswith("_"))
    made = type(f"RayHost[{cls.__name__}]", (RayHost,), namespace)
    _HOST_CLASSES[cls] = made
    return made


def _forwarder(name: str, signature: inspect.Signature) -> Any:
    def forward(self: RayHost, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.obj, name)(*args, **kwargs)

    forward.__name__ = name
    forward.__signature__ = signature  # what Ray binds a call's arguments against
    return forward


def _node_has_gpus() -> bool:
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    return any(n.get("NodeID") == node_id and n.get("Resources", {}).get("GPU", 0) for n in ray.nodes())


def death_key(actor_id: str) -> str:
    """Where the reason an actor ended itself (max_memory) is kept for its callers."""
    return f"death:{actor_id}"
