"""``parl.utils.tensorboard``: PARL 2.x's tensorboard backend module, here the functions of ``parl.utils.summary``.

PARL's course (``lesson5/homework/ddpg_quadrotor/train.py``) and older PARL programs write
``from parl.utils import tensorboard`` and call ``tensorboard.add_scalar(tag, value, step)``. The functions are
the very objects of :mod:`parl_core.utils.summary` (one writer, one log directory); see that module for their
arguments and where the event files go.
"""

from parl_core.utils.summary import add_histogram, add_scalar, close, flush

__all__ = ["add_histogram", "add_scalar", "close", "flush"]
