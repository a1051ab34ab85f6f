"""The meta-package re-exports the very objects of the five packages, lazily."""

import subprocess
import sys

import pytest


def run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_parl_is_lazy_and_side_effect_free():
    out = run("import sys, logging, threading, parl\n"
              "heavy = [m for m in ('torch', 'paddle', 'gymnasium', 'tensorboardX', 'zmq', 'flask', 'parl_core.torch')"
              " if m in sys.modules]\n"
              "print(heavy, logging.getLogger().handlers, threading.active_count())")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] [] 1"


def test_utils_modules_are_the_same_objects():
    out = run("import sys\n"
              "from parl.utils import summary, logger\n"
              "import parl.utils.summary\n"
              "from parl.utils.scheduler import LinearDecayScheduler\n"
              "import parl, parl_core.utils, parl_core.utils.summary as s, parl_core.utils.scheduler as sc\n"
              "print(summary is s, parl.utils.summary is s, logger is parl_core.utils.logger,\n"
              "      LinearDecayScheduler is sc.LinearDecayScheduler, parl.utils is sys.modules['parl.utils'],\n"
              "      sys.modules['parl.utils.scheduler'] is sc,\n"
              "      parl.utils.ReplayMemory is parl_core.utils.ReplayMemory)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 7


def test_utils_tensorboard_is_parls_name_for_the_summary_writer(tmp_path):
    """PARL's course writes ``from parl.utils import logger, tensorboard, ReplayMemory``; its scalars reach the
    one writer of ``parl.utils.summary``."""
    out = run("from parl.utils import logger, tensorboard, ReplayMemory, summary\n"
              f"summary.set_logdir({str(tmp_path)!r})\n"
              "tensorboard.add_scalar('eval/episode_reward', 1.5, 10)\n"
              "tensorboard.flush()\n"
              "print(tensorboard.add_scalar is summary.add_scalar, tensorboard.flush is summary.flush,\n"
              "      sorted(tensorboard.__all__) == ['add_histogram', 'add_scalar', 'close', 'flush'])\n"
              "tensorboard.close()")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 3
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())


def test_utils_visualdl_is_parls_name_for_the_summary_writer(tmp_path):
    """PARL 2.2.1's paddle ``examples/AlphaZero`` writes ``from parl.utils import visualdl`` (it stopped there with
    ``ImportError``); its scalars reach the one writer of ``parl.utils.summary`` (tensorboard event files)."""
    out = run("from parl.utils import logger, visualdl, summary\n"
              f"summary.set_logdir({str(tmp_path)!r})\n"
              "visualdl.add_scalar('perfect_moves_rate', 0.5, 1)\n"
              "visualdl.flush()\n"
              "print(visualdl.add_scalar is summary.add_scalar, visualdl.close is summary.close,\n"
              "      sorted(visualdl.__all__) == ['add_histogram', 'add_scalar', 'close', 'flush'])\n"
              "visualdl.close()")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 3
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())


def test_core_classes_and_algorithms_are_reexported():
    import parl
    import parl_algorithms
    import parl_core
    import parl_core.torch

    assert parl.Model is parl_core.Model is parl_core.torch.Model
    assert parl.Agent is parl_core.torch.Agent and parl.Algorithm is parl_core.torch.Algorithm
    assert parl.algorithms.PolicyGradient is parl_algorithms.PolicyGradient
    from parl.algorithms import PolicyGradient

    assert PolicyGradient is parl_algorithms.PolicyGradient
    assert parl.get_backend() == "torch"


def test_env_helpers_are_reexported():
    import parl
    from parl_core.env import compat_wrappers, continuous_wrappers

    assert parl.env.CompatWrapper is compat_wrappers.CompatWrapper
    assert parl.env.ActionMappingWrapper is continuous_wrappers.ActionMappingWrapper
    import parl.env.compat_wrappers

    assert parl.env.compat_wrappers is compat_wrappers


def test_multiagent_env_names_are_reexported_without_importing_the_envs():
    # PARL's examples do `from parl.env.multiagent_env import MAenv`
    code = (
        "import sys, parl.env\n"
        "from parl.env.multiagent_env import MAenv\n"
        "from parl.env import make_multiagent_env, MultiAgentVectorEnv\n"
        "import parl.env.multiagent, parl_core.env.multiagent_env\n"
        "assert MAenv is parl_core.env.multiagent_env.MAenv and parl.env.MAenv is MAenv\n"
        "assert parl.env.multiagent.make_multiagent_env is make_multiagent_env\n"
        "assert MultiAgentVectorEnv is parl_core.env.MultiAgentVectorEnv\n"
        "heavy = ('mpe2', 'pettingzoo', 'lbforaging', 'rware', 'torch', 'paddle')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_unknown_attribute_is_an_attribute_error():
    import parl

    with pytest.raises(AttributeError, match="no attribute 'Modle'"):
        parl.Modle  # noqa: B018
    assert {"Model", "Algorithm", "Agent", "algorithms", "utils", "env", "remote_class", "connect"} <= set(dir(parl))


def test_version_matches_core():
    import parl
    import parl_core

    assert parl.__version__ == parl_core.__version__


def test_readme_tour_runs(tmp_path, monkeypatch):
    """The API tour of packages/parl/README.md, run as written."""
    import pathlib
    import re

    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"## API tour\n\n```python\n(.*?)```", readme, re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "runs" / "agent.ckpt").is_file()
    assert "p = [[0." in out.stdout
