"""Few-shot sine-wave regression tasks, the benchmark of MAML (Finn et al. 2017, section 5.1) in the setting
of Meta-SGD (Li, Zhou, Chen and Li 2017, "Meta-SGD: Learning to Learn Quickly for Few-Shot Learning",
section 4.1) that PARL 2.2.1's ``benchmark/torch/maml++`` uses: amplitude in [0.1, 5], phase in [0, pi],
x in [-5, 5], and PARL's frequency in [0.8, 1.2].

Framework-free (numpy only): the torch algorithm, its example and the benchmarks share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SineTaskDistribution", "SineTasks"]


def _check_range(name: str, value: tuple[float, float]) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a (low, high) pair of numbers, got {value!r}") from err
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"{name} must be a finite (low, high) pair with low <= high, got {value!r}; swap the bounds")
    return low, high


@dataclass(frozen=True)
class SineTasks:
    """A batch of sine tasks, each split into a support set (to adapt on) and a query set (to score).

    Attributes:
        x_support: float32 ``[T, K, 1]`` inputs of the ``K`` support points of each of ``T`` tasks.
        y_support: float32 ``[T, K, 1]`` targets ``amplitude * sin(frequency * x + phase)``.
        x_query: float32 ``[T, Q, 1]``.
        y_query: float32 ``[T, Q, 1]``.
        amplitude, phase, frequency: float64 ``[T]`` each task's parameters.
    """

    x_support: np.ndarray
    y_support: np.ndarray
    x_query: np.ndarray
    y_query: np.ndarray
    amplitude: np.ndarray
    phase: np.ndarray
    frequency: np.ndarray

    def __len__(self) -> int:
        return len(self.amplitude)

    def __getitem__(self, index) -> SineTasks:
        """The tasks ``index`` selects (an int array or a slice), as a new ``SineTasks``."""
        return SineTasks(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


class SineTaskDistribution:
    """Sampler of sine tasks ``y = amplitude * sin(frequency * x + phase)``, x uniform in ``x_range``.

    Args:
        amplitude: (low, high) range of the uniform amplitude (Meta-SGD: 0.1 to 5).
        phase: (low, high) range of the uniform phase in radians (Meta-SGD: 0 to pi).
        frequency: (low, high) range of the uniform angular frequency (PARL: 0.8 to 1.2; ``(1, 1)`` is
            MAML's and Meta-SGD's fixed frequency).
        x_range: (low, high) range of the uniform inputs (-5 to 5).

    Raises:
        ValueError: a range is not a finite (low, high) pair with low <= high.
    """

    def __init__(
        self,
        amplitude: tuple[float, float] = (0.1, 5.0),
        phase: tuple[float, float] = (0.0, math.pi),
        frequency: tuple[float, float] = (0.8, 1.2),
        x_range: tuple[float, float] = (-5.0, 5.0),
    ) -> None:
        self.amplitude = _check_range("amplitude", amplitude)
        self.phase = _check_range("phase", phase)
        self.frequency = _check_range("frequency", frequency)
        self.x_range = _check_range("x_range", x_range)

    def sample(self, num_tasks: int, num_support: int, num_query: int, rng: np.random.Generator) -> SineTasks:
        """``num_tasks`` new tasks with ``num_support`` support and ``num_query`` query points each.

        Raises:
            ValueError: a count is not a positive integer (``num_query`` may be 0), or ``rng`` is not a
                ``numpy.random.Generator`` (use ``numpy.random.default_rng(seed)``).
        """
        for name, value, low in (
            ("num_tasks", num_tasks, 1),
            ("num_support", num_support, 1),
            ("num_query", num_query, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(
                f"rng must be a numpy.random.Generator (numpy.random.default_rng(seed)), got {type(rng).__name__}"
            )
        amplitude = rng.uniform(*self.amplitude, num_tasks)
        phase = rng.uniform(*self.phase, num_tasks)
        frequency = rng.uniform(*self.frequency, num_tasks)
        x = rng.uniform(*self.x_range, (num_tasks, num_support + num_query))
        y = amplitude[:, None] * np.sin(frequency[:, None] * x + phase[:, None])
        x, y = x.astype(np.float32)[..., None], y.astype(np.float32)[..., None]
        return SineTasks(
            x[:, :num_support], y[:, :num_support], x[:, num_support:], y[:, num_support:], amplitude, phase, frequency
        )

    def resplit(self, tasks: SineTasks, num_support: int, rng: np.random.Generator) -> SineTasks:
        """The same tasks with their points shuffled and split again into ``num_support`` support points and
        the rest as query (PARL's fixed training tasks are re-split at every visit this way).

        Raises:
            ValueError: ``num_support`` is not in ``[1, points per task)``.
        """
        x = np.concatenate([tasks.x_support, tasks.x_query], axis=1)
        y = np.concatenate([tasks.y_support, tasks.y_query], axis=1)
        if not 1 <= num_support < x.shape[1]:
            raise ValueError(
                f"num_support must be in [1, {x.shape[1]}) for tasks of {x.shape[1]} points, got {num_support}"
            )
        order = rng.permuted(np.broadcast_to(np.arange(x.shape[1]), x.shape[:2]), axis=1)
        x = np.take_along_axis(x, order[..., None], axis=1)
        y = np.take_along_axis(y, order[..., None], axis=1)
        return SineTasks(
            x[:, :num_support],
            y[:, :num_support],
            x[:, num_support:],
            y[:, num_support:],
            tasks.amplitude,
            tasks.phase,
            tasks.frequency,
        )
