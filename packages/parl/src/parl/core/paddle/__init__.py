"""``parl.core.paddle``: PARL's path of the paddle backend, re-exporting ``parl_core.paddle``.

Submodules such as ``parl.core.paddle.policy_distribution`` are the very modules of ``parl_core.paddle``.
"""

from parl._reexport import reexport

__getattr__ = reexport(globals(), "parl_core.paddle")
