"""``parl_algorithms.torch`` / ``parl_algorithms.paddle`` list (``__all__``, ``dir()``) exactly the algorithms they
implement, so that tools that read them (autodoc's API reference, ``from ... import *``) find every class and no
name that raises; an algorithm of the other backend only raises ImportError naming where it is."""

from __future__ import annotations

import importlib

import pytest

from parl_algorithms import _ALGORITHMS


@pytest.mark.parametrize("backend", ["torch", "paddle"])
def test_backend_module_lists_what_it_implements(backend):
    pytest.importorskip(backend)
    module = importlib.import_module(f"parl_algorithms.{backend}")
    assert set(module.__all__) <= set(_ALGORITHMS)
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        assert getattr(module, name).__name__ == name
    for name in set(_ALGORITHMS) - set(module.__all__):
        with pytest.raises(ImportError, match=f"{name} has no {backend} implementation"):
            getattr(module, name)


def test_maml_is_torch_only():
    import parl_algorithms.paddle as paddle_algs
    import parl_algorithms.torch as torch_algs

    assert "MAML" in torch_algs.__all__ and "MAML" not in paddle_algs.__all__
    assert {"DQN", "PPO", "SAC", "PopArt", "QMIX"} <= set(paddle_algs.__all__)
