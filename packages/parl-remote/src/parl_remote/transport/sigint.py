"""Ctrl-C deferral: a Ctrl-C must never cut a message in two.

Python raises ``KeyboardInterrupt`` at the next bytecode boundary, which can fall between taking bytes
off a socket (or handing them to it) and recording that, and a stream would lose its framing; a
multipart zmq message could be cut, or an encoded request that took shared-memory regions could be
dropped. So the client installs ``guard_sigint`` in its main thread: a SIGINT handler, wrapping the one
it finds, that defers a Ctrl-C landing inside registered critical code (``defer_ctrl_c_in``,
``register_critical``), or in the helpers it calls, until that code returns, and passes every other
Ctrl-C on at once. A wait for a socket to become writable (``register_interruptible``) stays
interruptible: nothing is half recorded there.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from typing import Any


class _Sigint:
    """State of the Ctrl-C deferral (``guard_sigint``)."""

    main_ident: int | None = None
    pending: Any = None  # the guard that deferred a Ctrl-C, until the stream operation returns


def _guard(previous: Any) -> Any:
    """A SIGINT handler that defers a Ctrl-C landing inside ``_CRITICAL`` code and passes any other on to
    ``previous`` at once."""

    def on_sigint(signum: int, frame: Any) -> None:
        if _in_critical(frame):
            _Sigint.pending = on_sigint
            return
        previous(signum, frame)

    on_sigint.xparl_previous = previous  # type: ignore[attr-defined]
    return on_sigint


def _in_critical(frame: Any) -> bool:
    """True when ``frame`` or a caller of it runs ``_CRITICAL`` code: the helpers that code calls (the prefix
    parser, the error paths) count as it. A wait for the socket to be writable (``_INTERRUPTIBLE``) ends
    the search: nothing is half recorded there, and a send to a peer that stopped reading must stay
    interruptible."""
    while frame is not None:
        code = frame.f_code
        if code in _CRITICAL:
            return True
        if code in _INTERRUPTIBLE:
            return False
        frame = frame.f_back
    return False


def fire_pending() -> None:
    """Delivers a deferred Ctrl-C to the handler its guard wraps (usually ``KeyboardInterrupt``); main thread
    only."""
    if threading.get_ident() != _Sigint.main_ident:
        return
    guard, _Sigint.pending = _Sigint.pending, None
    guard.xparl_previous(signal.SIGINT, sys._getframe(1))


def guard_sigint() -> bool:
    """Makes Ctrl-C safe for this process's stream connections (see the module docstring).

    Installs, in the main thread, a SIGINT handler wrapping the current one: a Ctrl-C that lands while a
    connection moves bytes and records them waits until that stream operation returns (microseconds);
    every other Ctrl-C reaches the wrapped handler at once. Idempotent. A handler the program installs
    later replaces it (the connections then lose only this protection); restoring the guard restores it.

    Returns:
        True when the guard is installed; False outside the main thread or when SIGINT is not handled by
        a Python callable (``SIG_IGN`` / ``SIG_DFL``: then no ``KeyboardInterrupt`` can land anywhere).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGINT)
    if hasattr(current, "xparl_previous"):
        return True
    if not callable(current):
        return False
    _Sigint.main_ident = threading.get_ident()
    signal.signal(signal.SIGINT, _guard(current))
    return True



# the code that moves bytes and records it: a Ctrl-C landing here, or in what it calls, is deferred (guard_sigint)
_CRITICAL: set = set()
# ... except while a blocked send waits for the socket to be writable (the outbox keeps the unsent bytes)
_INTERRUPTIBLE: set = set()


def register_critical(*functions: Any) -> None:
    """Marks ``functions`` as code that a Ctrl-C must not interrupt (it is deferred until they return)."""
    _CRITICAL.update(f.__code__ for f in functions)


def register_interruptible(*functions: Any) -> None:
    """Marks ``functions`` (called from critical code) as waits where a Ctrl-C is delivered at once."""
    _INTERRUPTIBLE.update(f.__code__ for f in functions)


def defer_ctrl_c_in(function: Any) -> Any:
    """Decorator: a Ctrl-C landing while ``function`` (or what it calls) runs waits until it returns or raises
    (``guard_sigint``), and is delivered then."""
    _CRITICAL.add(function.__code__)

    @functools.wraps(function)
    def deferring(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            if _Sigint.pending:
                fire_pending()

    return deferring

