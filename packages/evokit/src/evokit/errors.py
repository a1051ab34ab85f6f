"""EvoKit's error classes: one base class, one subclass per kind of failure."""

from __future__ import annotations

__all__ = [
    "EvoKitError",
    "ConfigError",
    "SamplingLogError",
    "TruncatedLogError",
    "SolverStateError",
    "StaleSampleError",
    "FilterStateError",
    "ModelFileError",
]


class EvoKitError(Exception):
    """Base class of every error raised by evokit."""


class ConfigError(EvoKitError, ValueError):
    """The config file cannot be read, parsed, or describes an unsupported setting."""


class SolverStateError(EvoKitError, RuntimeError):
    """A method was called in the wrong state (e.g. ``update`` before ``init_solver``)."""


class StaleSampleError(EvoKitError, ValueError):
    """Every sample of an update came from a model iteration no longer kept in the model warehouse."""


class SamplingLogError(EvoKitError, ValueError):
    """A sampling log is corrupt (a record's size field is impossible, or its bytes do not parse)."""


class TruncatedLogError(SamplingLogError):
    """A sampling log ends inside a record.

    Attributes:
        sampling_infos: the complete records before the truncation, in file order.
        rewards: float32 [num_complete] the rewards of those records.
        complete_bytes: the byte offset where the incomplete record starts (the size to truncate the file to).
    """

    def __init__(self, message: str, sampling_infos: list, rewards, complete_bytes: int) -> None:
        super().__init__(message)
        self.sampling_infos = sampling_infos
        self.rewards = rewards
        self.complete_bytes = complete_bytes


class FilterStateError(EvoKitError, ValueError):
    """An observation filter state (or increment) is malformed: missing keys, wrong shapes, invalid values."""


class ModelFileError(EvoKitError, ValueError):
    """A model or solver file cannot be loaded: empty, truncated, corrupt, not written by evokit, referencing
    objects other than arrays (never unpickled), or of another architecture. The message names the file, what
    is wrong and what to do; the agent's model and solver are left as they were."""
