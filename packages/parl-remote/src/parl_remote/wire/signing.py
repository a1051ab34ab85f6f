"""Message signing: HMAC-SHA256 with the cluster token (``protocol.py`` documents what is signed)."""

from __future__ import annotations

import hmac
import struct

LEN = struct.Struct("!Q")  # each frame after the head is signed behind its length

try:  # OpenSSL's HMAC object (copy/update/digest in C); the hmac module's pure-Python wrapper otherwise
    from _hashlib import hmac_new as _hmac_new
except ImportError:  # pragma: no cover - CPython without OpenSSL
    _hmac_new = hmac.new


class Signer:
    """Signs and verifies messages with HMAC-SHA256 and the cluster token.

    Args:
        token: the cluster's shared secret (str or bytes, non-empty).

    Raises:
        ValueError: for an empty token.
    """

    def __init__(self, token: str | bytes) -> None:
        key = token.encode() if isinstance(token, str) else bytes(token)
        if not key:
            raise ValueError("the cluster token is empty; pass token=... or set XPARL_TOKEN")
        self._key = key
        # the keyed HMAC state, computed once and copied per message (half the cost of a one-shot HMAC)
        self._base = _hmac_new(key, digestmod="sha256")

    def sign(self, header: bytes, body: bytes | memoryview, buffers: list = ()) -> bytes:
        """Returns the 32-byte signature of a header, a body stream and out-of-band buffers."""
        mac = self._base.copy()
        mac.update(header)
        mac.update(body)
        if not buffers:
            return mac.digest()
        for frame in buffers:
            view = memoryview(frame)
            mac.update(LEN.pack(view.nbytes))
            mac.update(view)
        return mac.digest()

    def verify(self, header: bytes, signature: bytes, body: bytes | memoryview, buffers: list = ()) -> bool:
        """True when ``signature`` signs ``header``, ``body`` and ``buffers`` (constant-time compare)."""
        return hmac.compare_digest(self.sign(header, body, buffers), signature)

