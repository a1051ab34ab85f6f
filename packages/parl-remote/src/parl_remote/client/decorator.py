"""``@remote_class``: every instance of the decorated class lives in its own process on the cluster."""

from __future__ import annotations

import inspect
import os
from typing import Any

from parl_remote import gpus
from parl_remote.client.connection import get_global_client

_OPTIONS = {"wait": True, "max_memory": None, "n_gpu": 0}
RESERVED_PREFIX = "_xparl"


def _method_names(cls: type) -> frozenset[str]:
    """Names the proxy turns into remote calls: callables defined on the class (not properties)."""
    names = set()
    for name in dir(cls):
        if name.startswith("__") and name.endswith("__"):
            continue
        try:
            static = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(static, (staticmethod, classmethod)) or (callable(static) and not isinstance(static, type)):
            names.add(name)
    return frozenset(names)


class RemoteProxy:
    """Base of the proxy classes made by ``remote_class``; an instance stands for a remote object.

    Method calls run remotely (in future mode they return ``RemoteFuture``), attribute reads return
    the remote value, attribute writes set it remotely. Deleting the proxy deletes the remote object.
    """

    _original: type = object
    _xparl_options: dict = {}
    _xparl_methods: frozenset = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for key in kwargs:
            if key.startswith(RESERVED_PREFIX):
                raise ValueError(f"keyword {key!r}: names starting with {RESERVED_PREFIX!r} are reserved by xparl")
        cls = type(self)
        actor = get_global_client().create_actor(cls._original, args, kwargs, cls._xparl_options)
        object.__setattr__(self, "_xparl_actor", actor)
        if actor.shadowed:
            _shadow(self, actor.shadowed)

    def __getattr__(self, name: str) -> Any:
        if name.startswith(RESERVED_PREFIX) or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        actor = self.__dict__.get("_xparl_actor")
        if actor is None:
            raise AttributeError(f"{name!r}: the remote object was not created")
        return actor.get_attr(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith(RESERVED_PREFIX):
            raise AttributeError(f"attribute names starting with {RESERVED_PREFIX!r} are reserved by xparl")
        self.__dict__["_xparl_actor"].set_attr(name, value)
        if name in type(self)._xparl_methods and not isinstance(getattr(type(self), name, None), property):
            _shadow(self, (name,))

    def destroy(self) -> None:
        """Ends the remote object now, in both modes (PARL's ``destroy``): its job exits and its CPU returns to
        the cluster. Idempotent; a later call on the proxy raises ``RemoteError`` ("... was deleted"). A class
        that defines its own ``destroy`` method gets that method called remotely instead."""
        actor = self.__dict__.get("_xparl_actor")
        if actor is not None:
            actor.close()

    def __del__(self) -> None:
        actor = self.__dict__.get("_xparl_actor")
        if actor is not None:
            try:
                actor.close()
            except Exception:  # interpreter shutdown: sockets may already be gone
                pass

    def __repr__(self) -> str:
        actor = self.__dict__.get("_xparl_actor")
        where = f"{actor.actor_id} pid={actor.pid} at {actor.address}" if actor else "not created"
        return f"<remote {type(self)._original.__qualname__} {where}>"


def _shadow(proxy: RemoteProxy, names: Any) -> None:
    """Makes reads of ``names`` on this proxy return the remote instance attributes that hide the class's
    methods of those names (PARL's rule, and Python's: instance attributes before methods). The proxy moves to
    a subclass of its own with a property per name, so proxies of unshadowed objects keep plain methods."""
    cls = type(proxy)
    props = {n: property(lambda self, n=n: self.__dict__["_xparl_actor"].get_attr(n)) for n in names}
    sub = type(cls.__name__, (cls,), {**props, "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    object.__setattr__(proxy, "__class__", sub)


def _remote_method(name: str, wait: bool) -> Any:
    """A proxy method (bound to the proxy, so the proxy lives at least until the call is sent)."""
    if wait:

        def method(self: RemoteProxy, *args: Any, **kwargs: Any) -> Any:
            return self.__dict__["_xparl_actor"].call(name, args, kwargs)

    else:

        def method(self: RemoteProxy, *args: Any, **kwargs: Any) -> Any:
            return self.__dict__["_xparl_actor"].submit(name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    return method


def _make_proxy(cls: type, options: dict) -> type:
    if not isinstance(cls, type):
        raise TypeError(f"@remote_class decorates classes, got {cls!r}")
    if os.environ.get("XPARL") == "True":  # inside a job or a cluster process: the class itself
        return cls
    namespace = {
        "_original": cls,
        "_xparl_options": dict(options),
        "_xparl_methods": _method_names(cls),
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
    }
    for name in namespace["_xparl_methods"]:
        if not name.startswith(RESERVED_PREFIX):
            namespace[name] = _remote_method(name, options.get("wait", True))
    return type(cls.__name__, (RemoteProxy,), namespace)


def remote_class(*args: Any, **kwargs: Any) -> Any:
    """Makes every instance of a class live in its own process on the cluster (PARL's decorator).

    Use as ``@remote_class`` or ``@remote_class(wait=False, max_memory=None, n_gpu=0)`` (keywords only). Call
    ``parl.connect(...)`` before creating instances.

    Example::

        import parl

        @parl.remote_class(wait=False, max_memory=1024)
        class Actor:
            def sum(self, n):
                return sum(range(n))

        parl.connect()  # an embedded local cluster; or parl.connect("HOST:8010"), parl.connect("ray://HOST:10001")
        actors = [Actor() for _ in range(2)]  # two processes
        futures = [a.sum(10**6) for a in actors]  # wait=False: both run at once
        print([f.get() for f in futures])

    Args:
        wait: True: method calls block and return the result. False: they return a
            ``RemoteFuture`` at once (PARL's ``get()`` plus ``concurrent.futures.Future``); several
            calls may be in flight on one actor and run in order.
        max_memory: MiB of resident memory the actor's process may add to what it held when the actor was
            assigned to it (PARL's rule: the limit counts from the job's start-up memory, so imports made by the
            job before, e.g. ``XPARL_PRELOAD``, do not count); beyond it the process is killed and calls raise
            ``ActorDiedError`` naming the limit. None: no limit.
        n_gpu: whole GPUs per actor, granted exclusively from one worker; the actor's process sees exactly
            them (``CUDA_VISIBLE_DEVICES`` is set before its class is loaded, so ``"cuda:0"`` is the first). An
            actor with ``n_gpu=0`` on a worker that offers GPUs sees none. Creating the actor waits while the
            GPUs are busy and raises ``ResourceError`` at once when no worker has that many.

    Returns:
        The proxy class (its ``_original`` attribute is the undecorated class).

    Raises:
        TypeError: unknown options, or decorating something that is not a class.
        ValueError: ``max_memory`` is not positive, or ``n_gpu`` is not an int >= 0.
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], type):
        return _make_proxy(args[0], _OPTIONS)
    if args:
        raise TypeError("use @remote_class or @remote_class(wait=..., max_memory=..., n_gpu=...) with keywords")
    unknown = set(kwargs) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"unknown @remote_class option(s) {sorted(unknown)}; the options are {sorted(_OPTIONS)}")
    max_memory = kwargs.get("max_memory")
    if max_memory is not None and (not isinstance(max_memory, (int, float)) or max_memory <= 0):
        raise ValueError(f"max_memory is in MiB and must be positive, got {max_memory!r}")
    gpus.check_n_gpu(kwargs.get("n_gpu", 0))
    options = {**_OPTIONS, **kwargs}
    return lambda cls: _make_proxy(cls, options)


# The signature the decorator is used with (``@remote_class`` or ``@remote_class(*, wait=..., ...)``), for help() and
# the API reference; the implementation takes ``*args, **kwargs`` to tell the two forms apart.
remote_class.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("cls", inspect.Parameter.POSITIONAL_ONLY, default=None, annotation="type | None")]
    + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                         annotation={"wait": "bool", "max_memory": "float | None", "n_gpu": "int"}[name])
       for name, default in _OPTIONS.items()],
    return_annotation="Any",
)
