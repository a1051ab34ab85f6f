"""The multi-agent algorithms' loss and target functions on paddle: :mod:`parl_algorithms.algorithms.marl_functional`
bound to paddle's layer, the same functions as torch's ``marl_functional`` (tested against them on the same inputs;
``popart_preserve_outputs`` takes paddle's Linear weight layout, ``[in, out]``)."""

from parl_algorithms.algorithms.marl_functional import bind
from parl_algorithms.paddle import ops

__all__ = bind(ops, globals(), popart_preserve_outputs={"out_axis": 1})
