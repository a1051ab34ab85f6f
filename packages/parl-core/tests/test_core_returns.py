"""Discounted returns, GAE and check_model_method on hand-computed cases."""

import numpy as np
import pytest

from parl_core.utils import calc_discount_sum_rewards, calc_gae, check_model_method, compute_gae, discounted_returns


def test_discounted_returns_single_trajectory():
    # G2 = 1, G1 = 2 + 0.5 * 1 = 2.5, G0 = 3 + 0.5 * 2.5 = 4.25
    out = discounted_returns(np.array([3.0, 2.0, 1.0]), 0.5)
    np.testing.assert_allclose(out, [4.25, 2.5, 1.0])
    assert out.dtype == np.float32 and out.shape == (3,)


def test_discounted_returns_batch_with_dones_and_bootstrap():
    rewards = np.ones((3, 2), dtype=np.float32)
    dones = np.array([[0, 1], [0, 0], [1, 0]], dtype=bool)
    out = discounted_returns(rewards, 0.5, dones=dones, bootstrap_value=np.array([10.0, 10.0]))
    # env 0 ends at t=2: [1.75, 1.5, 1]; env 1 ends at t=0, then bootstraps 10: G2 = 6, G1 = 4, G0 = 1
    np.testing.assert_allclose(out, [[1.75, 1.0], [1.5, 4.0], [1.0, 6.0]])


def test_discounted_returns_errors():
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]"):
        discounted_returns([1.0], 1.5)
    with pytest.raises(ValueError, match="dones has shape"):
        discounted_returns(np.ones((3, 2)), 0.9, dones=np.zeros(3, dtype=bool))
    with pytest.raises(ValueError, match="bootstrap_value has shape"):
        discounted_returns(np.ones((3, 2)), 0.9, bootstrap_value=np.zeros(3))
    with pytest.raises(ValueError, match="time axis"):
        discounted_returns(1.0, 0.9)
    with pytest.raises(TypeError, match="numeric"):
        discounted_returns(np.array(["a"]), 0.9)


def test_compute_gae_terminated_vs_truncated():
    rewards = np.array([1.0, 1.0, 1.0], dtype=np.float32)
    values = np.array([0.5, 0.5, 0.5], dtype=np.float32)
    next_values = np.array([0.5, 0.5, 2.0], dtype=np.float32)
    no = np.zeros(3, dtype=bool)
    last = np.array([False, False, True])
    gamma, lam = 0.9, 0.8
    # Terminated at t=2: delta2 = 1 - 0.5 = 0.5; delta0 = delta1 = 1 + 0.45 - 0.5 = 0.95
    # A2 = 0.5, A1 = 0.95 + 0.72 * 0.5 = 1.31, A0 = 0.95 + 0.72 * 1.31 = 1.8932
    adv, ret = compute_gae(rewards, values, next_values, last, no, gamma=gamma, gae_lambda=lam)
    np.testing.assert_allclose(adv, [1.8932, 1.31, 0.5], rtol=1e-6)
    np.testing.assert_allclose(ret, adv + values, rtol=1e-6)
    # Truncated at t=2: bootstrap from the final observation's value: delta2 = 1 + 0.9 * 2 - 0.5 = 2.3
    # A1 = 0.95 + 0.72 * 2.3 = 2.606, A0 = 0.95 + 0.72 * 2.606 = 2.82632
    adv, _ = compute_gae(rewards, values, next_values, no, last, gamma=gamma, gae_lambda=lam)
    np.testing.assert_allclose(adv, [2.82632, 2.606, 2.3], rtol=1e-6)
    assert adv.dtype == np.float32


def test_compute_gae_episode_boundary_inside_batch():
    # Two envs [T=2, B=2]; env 1 is truncated at t=0, so A0 does not take A1 of the next episode.
    rewards = np.ones((2, 2), dtype=np.float32)
    values = np.zeros((2, 2), dtype=np.float32)
    next_values = np.ones((2, 2), dtype=np.float32)
    terminated = np.zeros((2, 2), dtype=bool)
    truncated = np.array([[False, True], [False, False]])
    adv, _ = compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.5, gae_lambda=1.0)
    # deltas are all 1 + 0.5 = 1.5; env 0: A1 = 1.5, A0 = 1.5 + 0.5 * 1.5 = 2.25; env 1: A0 = 1.5
    np.testing.assert_allclose(adv, [[2.25, 1.5], [1.5, 1.5]])


def test_compute_gae_errors():
    ones = np.ones(3, dtype=np.float32)
    no = np.zeros(3, dtype=bool)
    with pytest.raises(ValueError, match="values has shape"):
        compute_gae(ones, np.ones(2), ones, no, no, gamma=0.9, gae_lambda=0.9)
    with pytest.raises(ValueError, match=r"gae_lambda must be in \[0, 1\]"):
        compute_gae(ones, ones, ones, no, no, gamma=0.9, gae_lambda=-0.1)


def test_parl_1d_helpers():
    np.testing.assert_allclose(calc_discount_sum_rewards([1.0, 1.0, 1.0], 0.5), [1.75, 1.5, 1.0])
    # deltas 0.95, 0.95, 1 + 0.9 * 1 - 0.5 = 1.4; A2 = 1.4, A1 = 0.95 + 0.72 * 1.4 = 1.958, A0 = 2.35976
    np.testing.assert_allclose(calc_gae([1.0, 1.0, 1.0], [0.5, 0.5, 0.5], 1.0, 0.9, 0.8),
                               [2.35976, 1.958, 1.4], rtol=1e-6)
    with pytest.raises(ValueError, match="discounted_returns"):
        calc_discount_sum_rewards(np.ones((2, 2)), 0.9)
    with pytest.raises(ValueError, match="equal length"):
        calc_gae([1.0, 1.0], [0.5], 0.0, 0.9, 0.9)


def test_returns_do_not_modify_inputs():
    rewards = np.array([1.0, 2.0], dtype=np.float32)
    discounted_returns(rewards, 0.9)
    np.testing.assert_array_equal(rewards, [1.0, 2.0])


def test_check_model_method(backend):
    class NoForward(backend.core.Model):
        def value(self, obs):
            return obs

    class WithForward(backend.core.Model):
        def __init__(self):
            super().__init__()
            self.fc = backend.Linear(2, 1)

        def forward(self, obs):
            return self.fc(obs)

    check_model_method(WithForward(), "forward", "PG")
    check_model_method(NoForward(), "value", "A2C")
    with pytest.raises(ValueError, match="PG needs the model to define `forward`"):
        check_model_method(NoForward(), "forward", "PG")
    with pytest.raises(ValueError, match=r"A2C needs the model to define `policy`.*def policy\(self"):
        check_model_method(WithForward(), "policy", "A2C")


def test_np_softmax_and_cross_entropy():
    from parl_core.utils import np_cross_entropy, np_softmax

    probs = np_softmax(np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]]))  # large logits do not overflow
    np.testing.assert_allclose(probs, [[0.25, 0.75], [0.5, 0.5]])
    np.testing.assert_allclose(np_cross_entropy(probs, [1, 0]), [-np.log(0.75), np.log(2.0)])
    assert np_softmax(np.zeros(3, dtype=np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        np_cross_entropy(probs, [0, 2])
