"""V-trace (Espeholt et al. 2018) on both backends: hand-computed cases, the paper's eq. 1 in numpy on random
inputs, paddle equal to torch on the same inputs, shape errors. Torch tensors (or numpy) go to the torch
implementation, paddle tensors to the paddle one, through the one entry point."""

import importlib.util
import math
import subprocess
import sys

import numpy as np
import pytest
from algo_models import paper_vtrace

from parl_algorithms.vtrace import VTraceReturns, from_importance_weights


class _Backend:
    """Tensor conversions of one framework (the test body is the same on both)."""

    def __init__(self, name):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (pip install 'parl-algorithms[{name}]')")
        self.name = name
        self.fw = __import__(name)

    def tensor(self, values):
        array = np.asarray(values, dtype=np.float32)
        return self.fw.as_tensor(array) if self.name == "torch" else self.fw.to_tensor(array)

    def col(self, *values):
        """[T, 1] float32 tensor."""
        return self.tensor(np.asarray(values, dtype=np.float32)[:, None])

    def numpy(self, tensor):
        assert type(tensor).__module__.split(".")[0] == self.name  # the backend's own implementation ran
        return tensor.detach().numpy() if self.name == "torch" else tensor.numpy()


@pytest.fixture(params=["torch", "paddle"])
def fw(request):
    return _Backend(request.param)


def _close(fw, tensor, expected):
    np.testing.assert_allclose(fw.numpy(tensor), np.asarray(expected, dtype=np.float32), rtol=1.3e-6, atol=1e-5)


def _hand_case(fw, behaviour, target):
    # T = 2, B = 1, gamma 0.9, rewards (1, 2), values (0.5, 1.0), bootstrap 3
    return dict(behaviour_actions_log_probs=fw.col(*behaviour), target_actions_log_probs=fw.col(*target),
                discounts=fw.col(0.9, 0.9), rewards=fw.col(1.0, 2.0), values=fw.col(0.5, 1.0),
                bootstrap_value=fw.tensor([3.0]))


def test_on_policy_targets_are_n_step_returns(fw):
    out = from_importance_weights(**_hand_case(fw, (-1.0, -2.0), (-1.0, -2.0)))
    assert isinstance(out, VTraceReturns)
    # vs_1 = 2 + 0.9 * 3 = 4.7 ; vs_0 = 1 + 0.9 * 2 + 0.81 * 3 = 5.23
    _close(fw, out.vs, [[5.23], [4.7]])
    # pg_0 = 1 + 0.9 * vs_1 - 0.5 = 4.73 ; pg_1 = 2 + 0.9 * 3 - 1 = 3.7
    _close(fw, out.pg_advantages, [[4.73], [3.7]])


def test_off_policy_rho_and_c_clipping_by_hand(fw):
    # rho_0 = 0.5 / 0.25 = 2 -> clipped to 1, c_0 = 1 ; rho_1 = 0.5 -> 0.5, c_1 = 0.5
    case = _hand_case(fw, (math.log(0.25), math.log(0.5)), (math.log(0.5), math.log(0.25)))
    out = from_importance_weights(**case)
    # delta_1 = 0.5 * (2 + 2.7 - 1) = 1.85 -> vs_1 = 2.85 ; delta_0 = 1 * 1.4 ; vs_0 = 0.5 + 1.4 + 0.9 * 1 * 1.85
    _close(fw, out.vs, [[3.565], [2.85]])
    # pg_0 = 1 * (1 + 0.9 * 2.85 - 0.5) = 3.065 ; pg_1 = 0.5 * 3.7 = 1.85
    _close(fw, out.pg_advantages, [[3.065], [1.85]])
    unclipped = from_importance_weights(**case, clip_rho_threshold=None, clip_pg_rho_threshold=None)
    # delta_0 = 2 * 1.4 = 2.8 (c_0 stays min(1, 2) = 1) -> vs_0 = 0.5 + 2.8 + 0.9 * 1.85 = 4.965
    _close(fw, unclipped.vs, [[4.965], [2.85]])
    _close(fw, unclipped.pg_advantages, [[2 * 3.065], [1.85]])


def _random_case(seed, T=9, B=5):
    rng = np.random.default_rng(seed)
    behaviour = np.log(rng.uniform(0.05, 1.0, (T, B)))
    target = np.log(rng.uniform(0.05, 1.0, (T, B)))
    # episode ends: discount 0 at a few steps
    discounts = 0.95 * (rng.random((T, B)) > 0.2)
    rewards, values, bootstrap = rng.normal(size=(T, B)), rng.normal(size=(T, B)), rng.normal(size=B)
    assert (discounts == 0).any() and (np.exp(target - behaviour) > 1.0).any()
    return behaviour, target, discounts, rewards, values, bootstrap


@pytest.mark.parametrize("clip_rho, clip_pg_rho", [(1.0, 1.0), (3.7, 2.2), (None, None), (0.5, None)])
def test_matches_the_paper_on_random_inputs(clip_rho, clip_pg_rho, fw):
    case = _random_case(7)
    expected_vs, expected_pg = paper_vtrace(*case, clip_rho, clip_pg_rho)
    out = from_importance_weights(*[fw.tensor(x) for x in case], clip_rho_threshold=clip_rho,
                                  clip_pg_rho_threshold=clip_pg_rho)
    np.testing.assert_allclose(fw.numpy(out.vs), expected_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fw.numpy(out.pg_advantages), expected_pg, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("clip_rho, clip_pg_rho", [(1.0, 1.0), (3.7, 2.2), (None, None)])
def test_paddle_equals_torch_on_the_same_inputs(clip_rho, clip_pg_rho):
    torch_fw, paddle_fw = _Backend("torch"), _Backend("paddle")
    case = [x.astype(np.float32) for x in _random_case(11, T=20, B=6)]
    kwargs = dict(clip_rho_threshold=clip_rho, clip_pg_rho_threshold=clip_pg_rho)
    expected = from_importance_weights(*[torch_fw.tensor(x) for x in case], **kwargs)
    got = from_importance_weights(*[paddle_fw.tensor(x) for x in case], **kwargs)
    for g, e in zip(got, expected, strict=True):  # float32 rounding of a 20-step recursion
        np.testing.assert_allclose(paddle_fw.numpy(g), torch_fw.numpy(e), rtol=1e-6, atol=2e-6)
    # a numpy batch goes to torch; one paddle tensor among numpy arrays sends the call to paddle
    mixed = from_importance_weights(*case[:-1], paddle_fw.tensor(case[-1]), **kwargs)
    np.testing.assert_allclose(paddle_fw.numpy(mixed.vs), torch_fw.numpy(expected.vs), rtol=1e-6, atol=2e-6)


def test_episode_end_cuts_the_trace(fw):
    case = _hand_case(fw, (0.0, 0.0), (0.0, 0.0))
    case["discounts"] = fw.col(0.0, 0.9)
    out = from_importance_weights(**case)
    # step 0 ended its episode: vs_0 = r_0 = 1 ; vs_1 = 2 + 0.9 * 3
    _close(fw, out.vs, [[1.0], [4.7]])


def test_targets_carry_no_gradient(fw):
    case = _hand_case(fw, (0.0, 0.0), (0.0, 0.0))
    for name in ("values", "target_actions_log_probs"):
        if fw.name == "torch":
            case[name].requires_grad_(True)
        else:
            case[name].stop_gradient = False
    out = from_importance_weights(**case)
    if fw.name == "torch":
        assert not out.vs.requires_grad and not out.pg_advantages.requires_grad
    else:
        assert out.vs.stop_gradient and out.pg_advantages.stop_gradient


@pytest.mark.parametrize("field, shape, match", [
    ("rewards", (3, 1), r"same time-major shape \[T, B\]"),
    ("values", (2,), r"same time-major shape \[T, B\]"),
    ("bootstrap_value", (2,), r"bootstrap_value must have shape \[B\]=\[1\]"),
    ("bootstrap_value", (1, 1), r"bootstrap_value must have shape \[B\]"),
])
def test_wrong_shapes_are_named(field, shape, match, fw):
    case = _hand_case(fw, (0.0, 0.0), (0.0, 0.0))
    case[field] = fw.tensor(np.zeros(shape))
    with pytest.raises(ValueError, match=match):
        from_importance_weights(**case)


@pytest.mark.parametrize("threshold", [0.0, -1.0, "1"])
def test_bad_threshold(threshold, fw):
    with pytest.raises(ValueError, match="clip_rho_threshold must be a number > 0"):
        from_importance_weights(**_hand_case(fw, (0.0, 0.0), (0.0, 0.0)), clip_rho_threshold=threshold)


def test_facade_path_and_no_torch_at_import():
    import parl.algorithms.vtrace as facade

    assert facade.from_importance_weights is from_importance_weights
    code = "import sys, parl, parl_algorithms.vtrace; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
