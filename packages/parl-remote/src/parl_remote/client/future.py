"""Futures returned by the methods of ``@remote_class(wait=False)`` actors."""

from __future__ import annotations

import concurrent.futures
from typing import Any

from parl_remote.errors import FutureObjectEmpty


class RemoteFuture(concurrent.futures.Future):
    """The result of a remote call in future mode.

    A ``concurrent.futures.Future`` (``result``, ``exception``, ``done``, ``add_done_callback``; works
    with ``concurrent.futures.wait`` / ``as_completed``) plus PARL's ``FutureObject`` interface
    (``get``, ``get_nowait``, ``empty``). ``get`` may be called several times.
    """

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """Returns the call's result, raising the remote exception if the call failed.

        Args:
            block: wait for the result; with False, raise ``FutureObjectEmpty`` when not done yet.
            timeout: seconds to wait at most (None: no limit).

        Raises:
            FutureObjectEmpty: no result within ``timeout`` (or yet, with ``block=False``).
            RemoteError: the remote call raised (an instance of the original type as well) or the
                actor died (``ActorDiedError``).
        """
        if not block:
            if not self.done():
                raise FutureObjectEmpty("the remote call has not finished yet")
            return self.result()
        try:
            return self.result(timeout)
        except concurrent.futures.TimeoutError:
            if self.done():  # the remote call itself raised a TimeoutError
                raise
            raise FutureObjectEmpty(f"the remote call did not finish within {timeout} s") from None

    def get_nowait(self) -> Any:
        """``get(block=False)``."""
        return self.get(block=False)

    def empty(self) -> bool:
        """True while the call has not finished."""
        return not self.done()
