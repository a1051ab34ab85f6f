"""Step-based value schedules (exploration rates, learning rates, entropy coefficients): PARL's API."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

__all__ = ["LinearDecayScheduler", "PiecewiseScheduler"]


def _check_step_num(step_num: int) -> int:
    if not isinstance(step_num, int) or isinstance(step_num, bool) or step_num < 1:
        raise ValueError(f"step_num must be an int >= 1, got {step_num!r}")
    return step_num


class _StepState:
    """``state_dict`` / ``load_state_dict`` of a schedule: its current step and value (for exact resumes)."""

    cur_step: int
    cur_value: float

    def state_dict(self) -> dict[str, float]:
        """``{"cur_step": int, "cur_value": float}``: where the schedule is."""
        return {"cur_step": self.cur_step, "cur_value": self.cur_value}

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Continue from a :meth:`state_dict`.

        Raises:
            ValueError: ``state`` lacks ``cur_step`` or ``cur_value``.
        """
        missing = {"cur_step", "cur_value"} - set(state)
        if missing:
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state lacks {sorted(missing)}; pass what "
                             "state_dict() returned")
        self.cur_step = int(state["cur_step"])
        self.cur_value = state["cur_value"]


class PiecewiseScheduler(_StepState):
    """A piecewise-constant schedule: ``value_i`` for ``step_i <= step < step_{i+1}``.

    Fixes the original PARL's bug: a ``step(step_num)`` that jumps over several boundaries lands on the
    right segment (PARL advanced at most one segment per call).

    Args:
        scheduler_list: ``[(step_0, value_0), (step_1, value_1), ...]`` with strictly increasing steps;
            before ``step_0`` the value is ``value_0``. E.g. ``[(0, 1e-3), (10_000, 5e-4)]``.

    Raises:
        ValueError: the list is empty, its steps are not strictly increasing, or an entry is not a pair.
    """

    def __init__(self, scheduler_list: Sequence[tuple[int, float]]) -> None:
        pairs = list(scheduler_list)
        if not pairs:
            raise ValueError("PiecewiseScheduler needs a non-empty list of (step, value) pairs")
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"PiecewiseScheduler entries must be (step, value) pairs, got {pair!r}")
        self.steps = [int(s) for s, _ in pairs]
        self.values = [v for _, v in pairs]
        if any(b <= a for a, b in zip(self.steps, self.steps[1:], strict=False)):
            raise ValueError(f"PiecewiseScheduler steps must be strictly increasing, got {self.steps}")
        self.cur_step = 0
        self.cur_value = self._value_at(0)

    def _value_at(self, step: int) -> float:
        index = bisect.bisect_right(self.steps, step) - 1
        return self.values[max(index, 0)]

    def step(self, step_num: int = 1) -> float:
        """Advance by ``step_num`` steps and return the value at the new step.

        Raises:
            ValueError: ``step_num`` is not an int >= 1.
        """
        self.cur_step += _check_step_num(step_num)
        self.cur_value = self._value_at(self.cur_step)
        return self.cur_value

    def get_value(self) -> float:
        """The value at the current step (without advancing)."""
        return self.cur_value


class LinearDecayScheduler(_StepState):
    """``value = start_value * (1 - step / max_steps)``, reaching 0 at ``max_steps`` and staying there.

    Args:
        start_value: the value at step 0.
        max_steps: steps until the value reaches 0 (> 0).

    Raises:
        ValueError: ``max_steps`` is not positive.
    """

    def __init__(self, start_value: float, max_steps: int) -> None:
        if not max_steps > 0:
            raise ValueError(f"max_steps must be > 0, got {max_steps!r}")
        self.start_value = start_value
        self.max_steps = max_steps
        self.cur_step = 0
        self.cur_value = start_value

    def step(self, step_num: int = 1) -> float:
        """Advance by ``step_num`` steps and return the value at the new step.

        Raises:
            ValueError: ``step_num`` is not an int >= 1.
        """
        self.cur_step = min(self.cur_step + _check_step_num(step_num), self.max_steps)
        self.cur_value = self.start_value * (1.0 - self.cur_step / self.max_steps)
        return self.cur_value

    def get_value(self) -> float:
        """The value at the current step (without advancing)."""
        return self.cur_value
