"""``parl.core``: PARL's module paths of the backends (``parl.core.torch``, ``parl.core.paddle``), aliases of
``parl_core``.

Importing ``parl.core`` imports no deep-learning framework; ``parl.core.torch`` imports torch, ``parl.core.paddle``
paddle.
"""
