"""``parl.utils.visualdl``: PARL 2.x's VisualDL backend module, here the functions of ``parl.utils.summary``.

PARL 2.2.1's paddle ``examples/AlphaZero`` (``Coach.py``) writes ``from parl.utils import visualdl`` and calls
``visualdl.add_scalar(tag, value, step)``. The functions are the very objects of :mod:`parl_core.utils.summary`
(one writer, one log directory): they write tensorboard event files (tensorboardX), which TensorBoard reads;
VisualDL's own log format is not written. See that module for their arguments and where the files go.
"""

from parl_core.utils.summary import add_histogram, add_scalar, close, flush

__all__ = ["add_histogram", "add_scalar", "close", "flush"]
