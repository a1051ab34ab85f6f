"""The framework layer (``parl_algorithms.torch.ops`` / ``parl_algorithms.paddle.ops``) and the algorithms written
once (``parl_algorithms.algorithms``): one set of names, signatures and docstrings; no framework import."""

import inspect
import subprocess
import sys

import pytest

torch_ops = pytest.importorskip("parl_algorithms.torch.ops")
paddle_ops = pytest.importorskip("parl_algorithms.paddle.ops")

MODULES = ("policy_gradient", "dqn", "ddpg", "td3", "a2c", "ppo", "sac", "cql", "oac", "iql", "dt", "a3c", "impala",
           "vtrace", "maddpg", "qmix", "coma", "mappo", "marl_functional")


def test_the_two_layers_have_the_same_names_and_signatures():
    assert torch_ops.__all__ == paddle_ops.__all__
    functions = [name for name in torch_ops.__all__ if inspect.isfunction(getattr(torch_ops, name))]
    assert len(functions) <= 40  # a thin layer
    for name in functions:
        t, p = getattr(torch_ops, name), getattr(paddle_ops, name)
        assert list(inspect.signature(t).parameters) == list(inspect.signature(p).parameters), name
        assert t.__doc__ and p.__doc__, name


def test_an_algorithm_written_once_imports_no_framework():
    code = ("import sys; import parl_algorithms.algorithms." + ", parl_algorithms.algorithms.".join(MODULES)
            + "; print(sorted({'torch', 'paddle'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("backend", ["torch", "paddle"])
@pytest.mark.parametrize("name", ["PolicyGradient", "DQN", "DDQN", "DDPG", "TD3", "A2C", "PPO", "SAC", "CQL", "OAC",
                                  "IQL", "DecisionTransformer", "A3C", "IMPALA", "MADDPG", "QMIX", "COMA",
                                  "MAPPO", "PopArt"])
def test_public_classes_keep_their_module_and_the_shared_docstring(backend, name):
    import parl_algorithms

    cls = parl_algorithms.load_algorithm(backend, name)
    assert cls.__module__ == f"parl_algorithms.{backend}.{parl_algorithms._ALGORITHMS[name]}"  # pickles name it
    shared = next(c for c in cls.__mro__ if c.__module__.startswith("parl_algorithms.algorithms."))
    assert cls.__doc__ == shared.__doc__ and "Raises:" in cls.__doc__
