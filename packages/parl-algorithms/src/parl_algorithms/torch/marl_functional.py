"""The multi-agent algorithms' loss and target functions on torch: :mod:`parl_algorithms.algorithms.marl_functional`
bound to torch's layer (``popart_preserve_outputs`` takes torch's Linear weight layout, ``[out, in]``)."""

from parl_algorithms.algorithms.marl_functional import bind
from parl_algorithms.torch import ops

__all__ = bind(ops, globals(), popart_preserve_outputs={"out_axis": 0})
