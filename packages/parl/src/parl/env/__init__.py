"""``parl.env``: re-exports ``parl_core.env`` (see that package for the documentation).

Submodules are aliases, not copies: ``parl.env.X`` is the very module object ``parl_core.env.X``.
"""

from parl._reexport import reexport

__getattr__ = reexport(globals(), "parl_core.env")
