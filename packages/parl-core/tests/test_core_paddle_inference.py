"""PARL's paddle-only ``Agent.save_inference_model`` and the signal-handler note of the paddle backend."""

import subprocess
import sys

import numpy as np
import pytest
from backends import load_backend


def test_save_inference_model_loads_with_paddle_jit(tmp_path):
    B = load_backend("paddle")
    from test_core_agent import make_agent

    agent = make_agent(B, seed=0)
    agent.alg.model.train()
    agent.save_inference_model(str(tmp_path / "infer" / "model"), [[None, 4]], ["float32"])
    assert agent.alg.model.training  # the mode is restored after export
    loaded = B.paddle.jit.load(str(tmp_path / "infer" / "model"))
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(loaded(B.paddle.to_tensor(obs)).numpy(), agent.sample(obs), rtol=1e-5, atol=1e-6)


def test_save_inference_model_errors(tmp_path):
    B = load_backend("paddle")
    from test_core_agent import make_agent

    agent = make_agent(B)
    with pytest.raises(ValueError, match="one dtype per input"):
        agent.save_inference_model(str(tmp_path / "m"), [[None, 4]], ["float32", "int64"])

    class NoForward(B.core.Model):
        pass

    with pytest.raises(ValueError, match=r"def forward\(self, obs\)"):
        agent.save_inference_model(str(tmp_path / "m"), [[None, 4]], ["float32"], model=NoForward())


def test_building_a_paddle_model_turns_off_paddles_fatal_error_report_on_sigterm():
    pytest.importorskip("paddle")
    code = ("import os, signal, sys\nimport parl_core.paddle as core\n{build}\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n")
    raw = subprocess.run([sys.executable, "-W", "ignore", "-c", code.format(build="")], capture_output=True,
                         text=True, timeout=120)
    assert "Termination signal" in raw.stdout + raw.stderr  # what `import paddle` alone does
    built = subprocess.run([sys.executable, "-W", "ignore", "-c", code.format(build="core.Model()")],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == -15 and "FatalError" not in built.stdout + built.stderr, built.stdout
