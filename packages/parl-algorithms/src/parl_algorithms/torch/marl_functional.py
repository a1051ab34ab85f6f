"""Pure, shape-checked loss and target functions of the multi-agent algorithms on torch:
:mod:`parl_algorithms.algorithms.marl_functional` with torch's layer bound.

Tensors in, tensors out, no side effects, a ``ValueError`` naming the expected shapes when inputs do not fit, and
each function cites the equation of its paper (the docstrings are those of the functions written once in
:mod:`parl_algorithms.algorithms.maddpg`, ``.qmix``, ``.mappo`` and ``.coma``). The other backend's module has
the same names, tested against this one on the same inputs. ``popart_preserve_outputs`` takes torch's Linear
weight layout, ``[out, in]``.
"""

from parl_algorithms.algorithms.marl_functional import bind
from parl_algorithms.torch import ops

_FUNCTIONS = bind(ops, __name__, popart_preserve_outputs={"out_axis": 0})
globals().update(_FUNCTIONS)
__all__ = list(_FUNCTIONS)
