"""``parl.utils``: re-exports ``parl_core.utils`` (see that package for the documentation).

Submodules are aliases, not copies: ``parl.utils.X`` is the very module object ``parl_core.utils.X``.
"""

from parl._reexport import reexport

__getattr__ = reexport(globals(), "parl_core.utils")
