"""The algorithms, each written once for torch and paddle (DESIGN §13, "One algorithm, two frameworks").

``parl_algorithms.algorithms.<algo>`` holds an algorithm's docstring (paper, shapes, dtypes, errors), its
constructor arguments and defaults, input checks and error texts, and its update sequence (``learn`` /
``predict`` / ``sample`` and the losses), written in the tensor operators and methods torch and paddle share.
Where the two frameworks differ in a name or a meaning (gather / take_along_axis, an optimizer step with
gradient clipping, device moves, a categorical draw, ...) it calls ``self.ops``: the backend's layer
``parl_algorithms.torch.ops`` or ``parl_algorithms.paddle.ops``, two modules with the same function names.

The public classes stay where users import them, ``parl_algorithms.torch.X`` and ``parl_algorithms.paddle.X``:
each is ``class X(algorithms.<algo>.X, Algorithm)`` with ``ops`` set to its backend's layer, plus only what
truly differs between the frameworks (a custom autograd node, a fused step, PARL's per-backend return values).

Importing this package imports no deep-learning framework.
"""
