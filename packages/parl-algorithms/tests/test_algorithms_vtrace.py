"""V-trace (Espeholt et al. 2018): hand-computed cases, the paper's eq. 1 in numpy on random inputs, shape errors."""

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from parl_algorithms.vtrace import VTraceReturns, from_importance_weights


def _col(*values):
    """[T, 1] float32 tensor."""
    return torch.tensor(values, dtype=torch.float32)[:, None]


def _hand_case(behaviour, target):
    # T = 2, B = 1, gamma 0.9, rewards (1, 2), values (0.5, 1.0), bootstrap 3
    return dict(behaviour_actions_log_probs=_col(*behaviour), target_actions_log_probs=_col(*target),
                discounts=_col(0.9, 0.9), rewards=_col(1.0, 2.0), values=_col(0.5, 1.0),
                bootstrap_value=torch.tensor([3.0]))


def test_on_policy_targets_are_n_step_returns():
    out = from_importance_weights(**_hand_case((-1.0, -2.0), (-1.0, -2.0)))
    assert isinstance(out, VTraceReturns)
    # vs_1 = 2 + 0.9 * 3 = 4.7 ; vs_0 = 1 + 0.9 * 2 + 0.81 * 3 = 5.23
    torch.testing.assert_close(out.vs, _col(5.23, 4.7))
    # pg_0 = 1 + 0.9 * vs_1 - 0.5 = 4.73 ; pg_1 = 2 + 0.9 * 3 - 1 = 3.7
    torch.testing.assert_close(out.pg_advantages, _col(4.73, 3.7))


def test_off_policy_rho_and_c_clipping_by_hand():
    # rho_0 = 0.5 / 0.25 = 2 -> clipped to 1, c_0 = 1 ; rho_1 = 0.5 -> 0.5, c_1 = 0.5
    case = _hand_case((math.log(0.25), math.log(0.5)), (math.log(0.5), math.log(0.25)))
    out = from_importance_weights(**case)
    # delta_1 = 0.5 * (2 + 2.7 - 1) = 1.85 -> vs_1 = 2.85 ; delta_0 = 1 * 1.4 ; vs_0 = 0.5 + 1.4 + 0.9 * 1 * 1.85
    torch.testing.assert_close(out.vs, _col(3.565, 2.85))
    # pg_0 = 1 * (1 + 0.9 * 2.85 - 0.5) = 3.065 ; pg_1 = 0.5 * 3.7 = 1.85
    torch.testing.assert_close(out.pg_advantages, _col(3.065, 1.85))
    unclipped = from_importance_weights(**case, clip_rho_threshold=None, clip_pg_rho_threshold=None)
    # delta_0 = 2 * 1.4 = 2.8 (c_0 stays min(1, 2) = 1) -> vs_0 = 0.5 + 2.8 + 0.9 * 1.85 = 4.965
    torch.testing.assert_close(unclipped.vs, _col(4.965, 2.85))
    torch.testing.assert_close(unclipped.pg_advantages, _col(2 * 3.065, 1.85))


def _paper_vtrace(behaviour, target, discounts, rewards, values, bootstrap, clip_rho, clip_pg_rho):
    """Eq. 1 as written: v_s = V(x_s) + sum_t (prod_{i<t} gamma_i c_i) rho_t delta_t, a double loop."""
    T, B = values.shape
    rhos = np.exp(target - behaviour)
    clipped = rhos if clip_rho is None else np.minimum(clip_rho, rhos)
    cs = np.minimum(1.0, rhos)
    next_values = np.concatenate([values[1:], bootstrap[None]], 0)
    vs = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            total, weight = 0.0, 1.0
            for t in range(s, T):
                total += weight * clipped[t, b] * (rewards[t, b] + discounts[t, b] * next_values[t, b] - values[t, b])
                weight *= discounts[t, b] * cs[t, b]
            vs[s, b] = values[s, b] + total
    next_vs = np.concatenate([vs[1:], bootstrap[None]], 0)
    pg_rhos = rhos if clip_pg_rho is None else np.minimum(clip_pg_rho, rhos)
    return vs, pg_rhos * (rewards + discounts * next_vs - values)


@pytest.mark.parametrize("clip_rho, clip_pg_rho", [(1.0, 1.0), (3.7, 2.2), (None, None), (0.5, None)])
def test_matches_the_paper_on_random_inputs(clip_rho, clip_pg_rho):
    rng = np.random.default_rng(7)
    T, B = 9, 5
    behaviour = np.log(rng.uniform(0.05, 1.0, (T, B)))
    target = np.log(rng.uniform(0.05, 1.0, (T, B)))
    # episode ends: discount 0 at a few steps
    discounts = 0.95 * (rng.random((T, B)) > 0.2)
    rewards, values, bootstrap = rng.normal(size=(T, B)), rng.normal(size=(T, B)), rng.normal(size=B)
    expected_vs, expected_pg = _paper_vtrace(behaviour, target, discounts, rewards, values, bootstrap,
                                             clip_rho, clip_pg_rho)
    assert (discounts == 0).any() and (np.exp(target - behaviour) > 1.0).any()
    out = from_importance_weights(behaviour, target, discounts, rewards, values, bootstrap,
                                  clip_rho_threshold=clip_rho, clip_pg_rho_threshold=clip_pg_rho)
    np.testing.assert_allclose(out.vs.numpy(), expected_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), expected_pg, rtol=1e-5, atol=1e-5)


def test_episode_end_cuts_the_trace():
    case = _hand_case((0.0, 0.0), (0.0, 0.0))
    case["discounts"] = _col(0.0, 0.9)
    out = from_importance_weights(**case)
    # step 0 ended its episode: vs_0 = r_0 = 1 ; vs_1 = 2 + 0.9 * 3
    torch.testing.assert_close(out.vs, _col(1.0, 4.7))


def test_targets_carry_no_gradient():
    case = _hand_case((0.0, 0.0), (0.0, 0.0))
    case["values"].requires_grad_(True)
    case["target_actions_log_probs"].requires_grad_(True)
    out = from_importance_weights(**case)
    assert not out.vs.requires_grad and not out.pg_advantages.requires_grad


@pytest.mark.parametrize("field, value, match", [
    ("rewards", torch.zeros(3, 1), r"same time-major shape \[T, B\]"),
    ("values", torch.zeros(2), r"same time-major shape \[T, B\]"),
    ("bootstrap_value", torch.zeros(2), r"bootstrap_value must have shape \[B\]=\[1\]"),
    ("bootstrap_value", torch.zeros(1, 1), r"bootstrap_value must have shape \[B\]"),
])
def test_wrong_shapes_are_named(field, value, match):
    case = _hand_case((0.0, 0.0), (0.0, 0.0))
    case[field] = value
    with pytest.raises(ValueError, match=match):
        from_importance_weights(**case)


@pytest.mark.parametrize("threshold", [0.0, -1.0, "1"])
def test_bad_threshold(threshold):
    with pytest.raises(ValueError, match="clip_rho_threshold must be a number > 0"):
        from_importance_weights(**_hand_case((0.0, 0.0), (0.0, 0.0)), clip_rho_threshold=threshold)


def test_facade_path_and_no_torch_at_import():
    import parl.algorithms.vtrace as facade

    assert facade.from_importance_weights is from_importance_weights
    code = "import sys, parl, parl_algorithms.vtrace; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
