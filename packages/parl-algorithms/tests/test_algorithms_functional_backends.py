"""``parl_algorithms.paddle.functional`` computes what ``parl_algorithms.torch.functional`` computes, on the
same inputs, and rejects the same bad shapes (the hand-computed cases are in test_algorithms_functional.py)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
paddle = pytest.importorskip("paddle")

from parl_algorithms.paddle import functional as PF  # noqa: E402
from parl_algorithms.torch import functional as TF  # noqa: E402

rng = np.random.default_rng(0)
Bn, A = 6, 3


def f32(*shape):
    return rng.normal(size=shape).astype(np.float32)


TERMINAL = (rng.random(Bn) < 0.3).astype(np.float32)
ACTION = rng.integers(0, A, size=Bn)

# function name -> (positional arguments as numpy / Python values)
CASES = {
    "td_target": (f32(Bn), f32(Bn), TERMINAL, 0.9),
    "double_dqn_target": (f32(Bn), f32(Bn, A), f32(Bn, A), TERMINAL, 0.95),
    "clipped_double_q_target": (f32(Bn), f32(Bn), f32(Bn), TERMINAL, 0.99),
    "sac_target": (f32(Bn), f32(Bn), f32(Bn), f32(Bn), TERMINAL, 0.99, 0.2),
    "normalize_advantages": (f32(Bn),),
    "clipped_surrogate_loss": (f32(Bn) * 0.1, f32(Bn) * 0.1, f32(Bn), 0.2),
    "clipped_value_loss": (f32(Bn), f32(Bn), f32(Bn), 0.2),
    "approx_kl": (f32(Bn) * 0.1, f32(Bn) * 0.1),
    "clip_fraction": (f32(Bn) * 0.3, f32(Bn) * 0.3, 0.1),
    "tanh_gaussian_log_prob": (f32(Bn, A), f32(Bn, A), f32(Bn, A) * 0.3),
    "cql_penalty": (f32(Bn), f32(Bn, 5), 0.7),
    "categorical_log_prob_entropy": (f32(Bn, A), ACTION),
    "gaussian_log_prob_entropy": (f32(Bn, A), f32(A) * 0.3, f32(Bn, A)),
}


def _convert(args, to_tensor):
    return [to_tensor(a) if isinstance(a, np.ndarray) else a for a in args]


def _numpy(out, to_numpy):
    return [to_numpy(o) for o in (out if isinstance(out, tuple) else (out,))]


def test_every_paddle_function_has_a_case():
    assert set(PF.__all__) - {"target_policy_smoothing"} == set(CASES)  # smoothing draws noise: see below


@pytest.mark.parametrize("name", sorted(CASES))
def test_paddle_function_equals_torch_function(name):
    args = CASES[name]
    expected = _numpy(getattr(TF, name)(*_convert(args, torch.as_tensor)), lambda t: t.numpy())
    got = _numpy(getattr(PF, name)(*_convert(args, paddle.to_tensor)), lambda t: t.numpy())
    for e, g in zip(expected, got, strict=True):
        assert e.shape == g.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)  # float32 rounding of sums of ~10


def test_target_policy_smoothing_clips_noise_and_action():
    paddle.seed(0)
    action = paddle.to_tensor(np.array([[0.95, -0.2]] * 2000, dtype=np.float32))
    out = PF.target_policy_smoothing(action, policy_noise=0.2, noise_clip=0.5).numpy()
    noise = out - action.numpy()
    assert out.max() <= 1.0 and np.abs(noise[:, 1]).max() <= 0.5 + 1e-6
    assert noise[:, 1].std() == pytest.approx(0.2, rel=0.1)  # N(0, 0.2) (clipped at 2.5 sigma)
    with pytest.raises(ValueError, match="noise_clip"):
        PF.target_policy_smoothing(action, policy_noise=0.2, noise_clip=-1.0)


@pytest.mark.parametrize("name, args", [
    ("td_target", (f32(3), f32(4), f32(3), 0.9)),
    ("td_target", (f32(3), f32(3), f32(3), 1.5)),
    ("double_dqn_target", (f32(3), f32(3, 2), f32(3, 4), f32(3), 0.9)),
    ("cql_penalty", (f32(3), f32(4, 2), 1.0)),
    ("categorical_log_prob_entropy", (f32(3, 2), np.zeros(4, dtype=np.int64))),
])
def test_same_errors(name, args):
    with pytest.raises(ValueError) as torch_err:
        getattr(TF, name)(*_convert(args, torch.as_tensor))
    with pytest.raises(ValueError) as paddle_err:
        getattr(PF, name)(*_convert(args, paddle.to_tensor))
    assert str(paddle_err.value).split(";")[0].split(":")[0] == str(torch_err.value).split(";")[0].split(":")[0]
