"""``parl.core.torch``: PARL's path of the torch backend, re-exporting ``parl_core.torch``.

Submodules such as ``parl.core.torch.policy_distribution`` are the very modules of ``parl_core.torch``.
"""

from parl._reexport import reexport

__getattr__ = reexport(globals(), "parl_core.torch")
