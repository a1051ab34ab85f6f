"""The paddle backend opts paddle's MKL into its AVX2 GEMM path on AMD CPUs (``parl_core.paddle._mkl``)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("paddle")
from parl_core.paddle import _mkl  # noqa: E402

AMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx fma avx2\n"
INTEL = AMD.replace("AuthenticAMD", "GenuineIntel")
OLD_AMD = AMD.replace(" fma avx2", "")  # no AVX2: MKL's AVX2 path would raise SIGILL


@pytest.fixture
def fresh(monkeypatch):
    """A process state in which the decision was not taken yet and the variable is unset."""
    monkeypatch.setattr(_mkl, "_decided", False)
    monkeypatch.delenv("MKL_DEBUG_CPU_TYPE", raising=False)


@pytest.mark.parametrize("cpuinfo, expected", [(AMD, "5"), (AMD.replace("AuthenticAMD", "HygonGenuine"), "5"),
                                               (INTEL, None), (OLD_AMD, None)])
def test_the_variable_is_set_only_on_amd_with_avx2(fresh, tmp_path, cpuinfo, expected):
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    assert _mkl.use_mkl_avx2_on_amd(str(path)) is (expected is not None)
    assert os.environ.get("MKL_DEBUG_CPU_TYPE") == expected
    assert _mkl.use_mkl_avx2_on_amd(str(path)) is False  # once per process


def test_a_value_set_by_the_user_is_kept(fresh, monkeypatch, tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(AMD)
    monkeypatch.setenv("MKL_DEBUG_CPU_TYPE", "2")
    assert _mkl.use_mkl_avx2_on_amd(str(path)) is False
    assert os.environ["MKL_DEBUG_CPU_TYPE"] == "2"


def test_no_cpuinfo_changes_nothing(fresh, tmp_path):
    assert _mkl.use_mkl_avx2_on_amd(str(tmp_path / "missing")) is False
    assert "MKL_DEBUG_CPU_TYPE" not in os.environ


def test_importing_changes_nothing_and_the_first_model_sets_it_on_this_cpu():
    """In a fresh process: ``import parl`` leaves the environment alone; building a paddle ``parl.Model`` sets
    the variable exactly when this machine's CPU is an AMD one with AVX2, and a GEMM afterwards agrees with
    numpy to float32 rounding."""
    with open("/proc/cpuinfo") as f:
        amd_here = _mkl._cpu_has_avx2_but_not_intel(f.read())
    code = ("import os\nimport numpy as np\nimport parl_core.paddle as core\nimport paddle\n"
            "before = os.environ.get('MKL_DEBUG_CPU_TYPE')\ncore.Model()\n"
            "x = np.random.default_rng(0).random((64, 64), dtype=np.float32)\n"
            "err = float(np.abs(paddle.matmul(paddle.to_tensor(x), paddle.to_tensor(x)).numpy() - x @ x).max())\n"
            "print(before, os.environ.get('MKL_DEBUG_CPU_TYPE'), err)\n")
    env = {k: v for k, v in os.environ.items() if k != "MKL_DEBUG_CPU_TYPE"}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120,
                         env=env, check=True)
    before, after, err = out.stdout.split()[-3:]
    assert before == "None"
    assert after == ("5" if amd_here else "None")
    assert float(err) < 1e-3
