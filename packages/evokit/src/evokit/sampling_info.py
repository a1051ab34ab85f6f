"""``SamplingInfo`` (what a sampling agent must log to reproduce its noise) and the binary sampling log.

The log format is the EvoKit online tutorial's: for each sample, ``float32 reward``, ``int32 size``, then
``size`` bytes of the serialised ``SamplingInfo`` (protobuf wire format; fields 1 ``key`` and 2
``model_iter_id`` are those of the original ``evo_kit.proto``, field 3 ``negative`` marks the mirrored half
of an antithetic pair and is ignored by the original parser). Numbers are little-endian (the original wrote
native byte order, which is little-endian on x86 and ARM Linux).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from evokit.config import _message_classes
from evokit.errors import SamplingLogError, TruncatedLogError

__all__ = ["SamplingInfo", "SamplingLogWriter", "write_sampling_log", "read_sampling_log"]

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<fi")
#: The largest ``size`` field accepted when reading a log (a SamplingInfo is ~10 bytes; larger means corruption).
MAX_RECORD_BYTES = 1 << 16


@dataclass(frozen=True, slots=True)
class SamplingInfo:
    """The compact record of one perturbation.

    Attributes:
        key: the noise key(s): for seeded Gaussian sampling the RNG seed, for cached sampling the offset into the
            noise table (float32 entries); a GA sample appends the index of its parent elite.
        model_iter_id: the model iteration (number of updates applied) whose parameters were perturbed.
        negative: True for the mirrored half of an antithetic pair (the noise was subtracted).
    """

    key: tuple[int, ...]
    model_iter_id: int = 0
    negative: bool = False

    def __post_init__(self) -> None:
        key = tuple(int(k) for k in self.key)
        if not key or any(k < 0 for k in key):
            raise ValueError(f"SamplingInfo.key must be a non-empty sequence of non-negative ints, got {self.key!r}")
        object.__setattr__(self, "key", key)
        if int(self.model_iter_id) < 0:
            raise ValueError(f"SamplingInfo.model_iter_id must be >= 0, got {self.model_iter_id}")
        object.__setattr__(self, "model_iter_id", int(self.model_iter_id))
        object.__setattr__(self, "negative", bool(self.negative))

    def to_bytes(self) -> bytes:
        """Serialise to protobuf wire format (a few bytes; readable by the original C++ ``SamplingInfo``)."""
        proto = _message_classes()["SamplingInfo"](key=self.key, model_iter_id=self.model_iter_id)
        if self.negative:
            proto.negative = True
        return proto.SerializeToString()

    @classmethod
    def from_bytes(cls, data: bytes) -> SamplingInfo:
        """Parse the bytes written by :meth:`to_bytes`.

        Raises:
            SamplingLogError: the bytes are not a SamplingInfo.
        """
        proto = _message_classes()["SamplingInfo"]()
        try:
            proto.ParseFromString(bytes(data))
            return cls(tuple(proto.key), proto.model_iter_id, proto.negative)
        except Exception as exc:  # protobuf's DecodeError, or our own ValueError on an empty key
            raise SamplingLogError(f"bytes {bytes(data)[:32]!r} are not a serialised SamplingInfo: {exc}") from exc


class SamplingLogWriter:
    """Writes ``(reward, SamplingInfo)`` records to a binary sampling log.

    By default the file is truncated when opened, as the tutorial's ``std::ofstream`` does, so that the tutorial's
    loop (one ``online_sampling`` then one ``offline_update`` per epoch, reusing one ``--log_path``) updates each
    epoch from its own samples only, never re-applying an earlier epoch's. Pass ``mode="ab"`` to append.

    Each record is written with one ``write`` call and flushed by :meth:`flush` / :meth:`close`, so a crash can
    only leave the last record incomplete, which :func:`read_sampling_log` reports without losing the others.

    Args:
        path: the log file.
        mode: ``"wb"`` (truncate first, default) or ``"ab"`` (append to the records already there).

    Example:
        >>> with SamplingLogWriter("sampling_log") as log:   # doctest: +SKIP
        ...     log.write(reward, sampling_info)
    """

    def __init__(self, path: str | os.PathLike, mode: str = "wb") -> None:
        if mode not in ("wb", "ab"):
            raise ValueError(f"mode must be 'wb' (truncate) or 'ab' (append), got {mode!r}")
        self.path = os.fspath(path)
        self._file: BinaryIO = open(self.path, mode)  # noqa: SIM115 - closed by close() / __exit__
        self.records_written = 0

    def write(self, reward: float, sampling_info: SamplingInfo) -> None:
        """Append one record.

        Args:
            reward: the reward the perturbed model earned (stored as float32).
            sampling_info: the record returned by ``add_noise``.

        Raises:
            TypeError: ``sampling_info`` is not a SamplingInfo.
            ValueError: ``reward`` is not finite.
        """
        if not isinstance(sampling_info, SamplingInfo):
            raise TypeError(f"expected a SamplingInfo, got {type(sampling_info).__name__}")
        reward = float(reward)
        if not np.isfinite(reward):
            raise ValueError(f"reward must be finite, got {reward}")
        data = sampling_info.to_bytes()
        self._file.write(_HEADER.pack(reward, len(data)) + data)
        self.records_written += 1

    def write_many(self, rewards: Iterable[float], sampling_infos: Iterable[SamplingInfo]) -> None:
        """Append one record per ``(reward, sampling_info)`` pair."""
        for reward, info in zip(rewards, sampling_infos, strict=True):
            self.write(reward, info)

    def flush(self) -> None:
        """Flush to the operating system."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self._file.close()

    def __enter__(self) -> SamplingLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_sampling_log(path: str | os.PathLike, sampling_infos: Iterable[SamplingInfo],
                       rewards: Iterable[float], *, append: bool = False) -> int:
    """Write records to ``path`` (truncating it unless ``append``); return the number written."""
    with SamplingLogWriter(path, "ab" if append else "wb") as log:
        log.write_many(rewards, sampling_infos)
        return log.records_written


def read_sampling_log(path: str | os.PathLike, *, allow_truncated: bool = False
                      ) -> tuple[list[SamplingInfo], np.ndarray]:
    """Read every record of a sampling log.

    Args:
        path: the log file.
        allow_truncated: if True, an incomplete last record is dropped with a warning instead of raising.

    Returns:
        ``(sampling_infos, rewards)``: the records in file order; ``rewards`` is float32 [num_records].

    Raises:
        FileNotFoundError: the log does not exist.
        TruncatedLogError: the file ends inside a record (it carries the complete records and the byte offset
            to truncate the file to; pass ``allow_truncated=True`` to keep them and go on).
        SamplingLogError: a size field is negative or larger than ``MAX_RECORD_BYTES``, or a record does not parse.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"sampling log not found: {path!r}; write one with SamplingLogWriter first")
    with open(path, "rb") as f:
        data = f.read()
    infos: list[SamplingInfo] = []
    rewards: list[float] = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < _HEADER.size:
            return _truncated(path, infos, rewards, pos, end, allow_truncated)
        reward, size = _HEADER.unpack_from(data, pos)
        if size < 0 or size > MAX_RECORD_BYTES:
            raise SamplingLogError(f"sampling log {path!r} is corrupt at byte {pos} (record {len(infos)}): "
                                   f"size field {size} is outside [0, {MAX_RECORD_BYTES}]")
        if end - pos - _HEADER.size < size:
            return _truncated(path, infos, rewards, pos, end, allow_truncated)
        start = pos + _HEADER.size
        infos.append(SamplingInfo.from_bytes(data[start:start + size]))
        rewards.append(reward)
        pos = start + size
    return infos, np.asarray(rewards, dtype=np.float32)


def _truncated(path: str, infos: list[SamplingInfo], rewards: list[float], pos: int, end: int,
               allow: bool) -> tuple[list[SamplingInfo], np.ndarray]:
    rewards_arr = np.asarray(rewards, dtype=np.float32)
    message = (f"sampling log {path!r} is truncated: {len(infos)} complete records, then {end - pos} bytes of an "
               f"incomplete record at byte {pos}; pass allow_truncated=True to use the complete records, or "
               f"truncate the file to {pos} bytes")
    if not allow:
        raise TruncatedLogError(message, infos, rewards_arr, pos)
    logger.warning("%s", message)
    return infos, rewards_arr
