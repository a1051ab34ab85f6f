"""Backend selection and import hygiene, each in a fresh interpreter (the choice is process-global)."""

import os
import subprocess
import sys

import pytest


def run(code, **env):
    full_env = {k: v for k, v in os.environ.items() if k != "PARL_BACKEND"}
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=full_env)


# run first in a child: pretend paddle (or torch) is not installed
HIDE = ("import importlib.util as _u\n_real = _u.find_spec\n"
        "_u.find_spec = lambda name, *a, **k: None if name.split('.')[0] == {hidden!r} else _real(name, *a, **k)\n")


def test_import_parl_core_imports_no_framework():
    code = ("import sys, logging, threading, signal, warnings\n"
            "import numpy  # numpy adds its own warning filters at import\n"
            "handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]\n"
            "filters = list(warnings.filters)\n"
            "import parl_core, parl_core.utils, parl_core.env\n"
            "bad = [m for m in ('torch', 'paddle', 'tensorboardX', 'gymnasium') if m in sys.modules]\n"
            "assert not bad, bad\n"
            "assert logging.getLogger().handlers == []\n"
            "assert threading.active_count() == 1\n"
            "assert handlers == [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]\n"
            "assert filters == warnings.filters\n"
            "print(parl_core.get_backend())\n"  # deciding the backend imports nothing either
            "assert 'torch' not in sys.modules and 'paddle' not in sys.modules\n"
            "print('ok')\n")
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "ok"


def test_only_torch_installed_is_the_default_and_model_resolves_lazily():
    out = run(HIDE.format(hidden="paddle") + "import sys, parl_core\n"
              "print(parl_core.get_backend(), 'torch' in sys.modules)\n"
              "M = parl_core.Model\nimport torch\nprint(issubclass(M, torch.nn.Module), 'torch' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["torch", "False", "True", "True"]
    assert "two backend frameworks" not in out.stderr


def test_only_paddle_installed_is_the_default():
    out = run(HIDE.format(hidden="torch") + "import parl_core, parl_core.paddle\n"
              "print(parl_core.get_backend(), parl_core.Model is parl_core.paddle.Model)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["paddle", "True"]
    assert "two backend frameworks" not in out.stderr


def test_both_installed_paddle_wins_with_one_log_line_naming_torch():
    out = run("import logging\nlogging.basicConfig()\nimport parl_core, parl_core.paddle\n"
              "print(parl_core.get_backend(), parl_core.Agent is parl_core.paddle.Agent)\nparl_core.Model")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["paddle", "True"]
    lines = [line for line in out.stderr.splitlines() if "two backend frameworks" in line]
    assert len(lines) == 1 and "export PARL_BACKEND=torch" in lines[0]


def test_paddle_requested_but_not_installed_names_the_fix():
    out = run(HIDE.format(hidden="paddle") + "import parl_core\nparl_core.Model", PARL_BACKEND="paddle")
    assert out.returncode != 0
    assert "ImportError" in out.stderr and "pip install 'parl-core[paddle]'" in out.stderr
    assert "export PARL_BACKEND=torch" in out.stderr


def test_parl_backend_env_var_selects_and_validates():
    out = run("import parl_core\nprint(parl_core.get_backend())", PARL_BACKEND="Torch")
    assert out.stdout.strip() == "torch", out.stderr
    out = run("import parl_core\nparl_core.Model", PARL_BACKEND="tensorflow")
    assert out.returncode != 0 and "unknown PARL backend 'tensorflow'" in out.stderr
    assert "export PARL_BACKEND=torch" in out.stderr


def test_parl_backend_env_var_selects_paddle():
    out = run("import parl_core, parl_core.paddle\nprint(parl_core.Model is parl_core.paddle.Model)",
              PARL_BACKEND="paddle")
    assert out.stdout.strip() == "True", out.stderr
    assert "two backend frameworks" not in out.stderr


def test_set_backend():
    out = run("import parl_core\nparl_core.set_backend('torch')\nprint(parl_core.get_backend())\n"
              "try:\n    parl_core.set_backend('mxnet')\nexcept ValueError as e:\n    print('ValueError', e)\n")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "torch" and lines[1].startswith("ValueError unknown PARL backend 'mxnet'")


def test_switching_after_use_is_an_error():
    out = run("import parl_core\nparl_core.Model\nparl_core.set_backend('paddle')", PARL_BACKEND="torch")
    assert out.returncode != 0 and "already 'torch'" in out.stderr


@pytest.mark.parametrize("name", ["torch", "paddle"])
def test_lazy_classes_are_the_selected_backend_classes_and_both_stay_importable(name):
    other = "paddle" if name == "torch" else "torch"
    out = run(f"import parl_core, parl_core.{name} as t, parl_core.{other} as o\n"
              "print([getattr(parl_core, n) is getattr(t, n) for n in ('Model', 'Algorithm', 'Agent')])\n"
              "print(o.Model is not parl_core.Model)", PARL_BACKEND=name)
    assert out.stdout.split() == ["[True,", "True,", "True]", "True"], out.stderr
