"""SGD, MOMENTUM and ADAM against their formulas, step by step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evokit.optimizers import SGD, Adam, Momentum

GRADS = [np.array([1.0, -2.0]), np.array([0.5, 0.0]), np.array([-1.0, 4.0])]


def test_sgd():
    opt = SGD(2, base_lr=0.1)
    theta = np.array([1.0, 1.0], dtype=np.float32)
    for g in GRADS:
        theta = opt.step(theta, g)
    # 1 - 0.1 * (1 + 0.5 - 1) = 0.95 ; 1 - 0.1 * (-2 + 0 + 4) = 0.8
    np.testing.assert_allclose(theta, [0.95, 0.8], rtol=1e-6)


def test_momentum():
    opt = Momentum(2, base_lr=0.1, momentum=0.9)
    theta = np.zeros(2, dtype=np.float32)
    theta = opt.step(theta, GRADS[0])  # v = [1, -2]            theta = [-0.1, 0.2]
    np.testing.assert_allclose(theta, [-0.1, 0.2], rtol=1e-6)
    theta = opt.step(theta, GRADS[1])  # v = [1.4, -1.8]        theta = [-0.24, 0.38]
    np.testing.assert_allclose(theta, [-0.24, 0.38], rtol=1e-6)
    theta = opt.step(theta, GRADS[2])  # v = [0.26, 2.38]       theta = [-0.266, 0.142]
    np.testing.assert_allclose(theta, [-0.266, 0.142], rtol=1e-5)


def test_adam_first_step_is_lr_times_sign():
    opt = Adam(2, base_lr=0.01)
    theta = opt.step(np.zeros(2, dtype=np.float32), np.array([3.0, -0.2]))
    # m_hat = g, v_hat = g^2 -> step = lr * g / (|g| + eps)
    np.testing.assert_allclose(theta, [-0.01 * 3 / (3 + 1e-8), 0.01 * 0.2 / (0.2 + 1e-8)], rtol=1e-6)


def test_adam_three_steps_by_hand():
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.05
    opt = Adam(1, base_lr=lr, beta1=b1, beta2=b2, epsilon=eps)
    theta = np.zeros(1, dtype=np.float32)
    m = v = 0.0
    expected = 0.0
    for t, g in enumerate([1.0, 0.5, -1.0], start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        expected -= lr * (m / (1 - b1**t)) / (math.sqrt(v / (1 - b2**t)) + eps)
        theta = opt.step(theta, np.array([g]))
        assert theta[0] == pytest.approx(expected, rel=1e-6)
    # after t=2: m = 0.14, v = 0.00124975 -> the value is pinned too
    assert opt.t == 3


def test_state_dict_round_trip_continues_identically():
    a, b = Adam(2, base_lr=0.1), Adam(2, base_lr=0.1)
    theta = np.ones(2, dtype=np.float32)
    theta_a = a.step(theta, GRADS[0])
    b.load_state_dict({k: v.copy() for k, v in a.state_dict().items()})
    np.testing.assert_array_equal(a.step(theta_a, GRADS[1]), b.step(theta_a, GRADS[1]))


def test_bad_gradient_is_rejected():
    with pytest.raises(ValueError, match="NaN or inf"):
        SGD(2, 0.1).step(np.zeros(2, dtype=np.float32), np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        SGD(2, 0.1).step(np.zeros(3, dtype=np.float32), np.zeros(3))
