"""Backend selection and import hygiene, each in a fresh interpreter (the choice is process-global)."""

import os
import subprocess
import sys


def run(code, **env):
    full_env = {k: v for k, v in os.environ.items() if k != "PARL_BACKEND"}
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=full_env)


def test_import_parl_core_imports_no_framework():
    code = ("import sys, logging, threading\n"
            "import parl_core, parl_core.utils, parl_core.env\n"
            "bad = [m for m in ('torch', 'paddle', 'tensorboardX', 'gymnasium') if m in sys.modules]\n"
            "assert not bad, bad\n"
            "assert logging.getLogger().handlers == []\n"
            "assert threading.active_count() == 1\n"
            "print('ok')\n")
    out = run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_default_backend_is_torch_and_model_resolves_lazily():
    out = run("import sys, parl_core\nprint(parl_core.get_backend(), 'torch' in sys.modules)\n"
              "M = parl_core.Model\nimport torch\nprint(issubclass(M, torch.nn.Module), 'torch' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["torch", "False", "True", "True"]


def test_parl_backend_env_var_selects_and_validates():
    out = run("import parl_core\nprint(parl_core.get_backend())", PARL_BACKEND="Torch")
    assert out.stdout.strip() == "torch", out.stderr
    out = run("import parl_core\nparl_core.Model", PARL_BACKEND="tensorflow")
    assert out.returncode != 0 and "unknown PARL backend 'tensorflow'" in out.stderr


def test_paddle_backend_is_reported_as_not_available():
    out = run("import parl_core\nparl_core.Model", PARL_BACKEND="paddle")
    assert out.returncode != 0
    assert "NotImplementedError" in out.stderr and "PARL_BACKEND=torch" in out.stderr


def test_set_backend():
    out = run("import parl_core\nparl_core.set_backend('torch')\nprint(parl_core.get_backend())\n"
              "try:\n    parl_core.set_backend('mxnet')\nexcept ValueError as e:\n    print('ValueError', e)\n")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "torch" and lines[1].startswith("ValueError unknown PARL backend 'mxnet'")


def test_switching_after_use_is_an_error():
    out = run("import parl_core\nparl_core.Model\nparl_core.set_backend('paddle')")
    assert out.returncode != 0 and "already 'torch'" in out.stderr


def test_lazy_classes_are_the_torch_backend_classes():
    out = run("import parl_core, parl_core.torch as t\n"
              "print([getattr(parl_core, n) is getattr(t, n) for n in ('Model', 'Algorithm', 'Agent')])")
    assert out.stdout.strip() == "[True, True, True]", out.stderr
