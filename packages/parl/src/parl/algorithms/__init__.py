"""``parl.algorithms``: re-exports ``parl_algorithms`` (see that package for the documentation).

Submodules are aliases, not copies: ``parl.algorithms.X`` is the very module object ``parl_algorithms.X``.
"""

from parl._reexport import reexport

__getattr__ = reexport(globals(), "parl_algorithms")
