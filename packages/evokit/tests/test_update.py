"""The ES update rule on hand-computed cases, fitness shaping, and samples from older model iterations."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from evokit import ESAgent, NumpyMLP, SamplingInfo, StaleSampleError, centered_ranks, parse_prototxt
from evokit.solvers import BasicES


class Linear:
    """A numpy 'model' holding a plain parameter vector (forward = x @ theta)."""

    def __init__(self, theta):
        self.theta = np.asarray(theta, dtype=np.float32)

    def get_weights(self):
        return {"theta": self.theta.copy()}

    def set_weights(self, weights):
        self.theta = np.asarray(weights["theta"], dtype=np.float32).copy()

    def forward(self, x):
        return np.asarray(x, dtype=np.float32) @ self.theta


def test_centered_ranks():
    np.testing.assert_allclose(centered_ranks(np.array([3.0, 1.0, 2.0])), [0.5, -0.5, 0.0])
    np.testing.assert_allclose(centered_ranks(np.array([10.0, -4.0, 7.0, 0.0, 1.0])), [0.5, -0.5, 0.25, -0.25, 0.0])
    np.testing.assert_array_equal(centered_ranks(np.array([5.0])), [0.0])


def _solver(text: str, theta) -> BasicES:
    return BasicES(parse_prototxt(text).solver, np.asarray(theta, dtype=np.float32))


def test_basic_es_gradient_by_hand():
    # theta = 0, std = 0.5, one mirrored pair of noise eps = [1, 2], rewards 3 (+eps) and 1 (-eps).
    # ranks -> w = [+0.5, -0.5];  g = (0.5 * eps + (-0.5) * (-eps)) / (N * std) = eps / 1 = [1, 2]
    # SGD, lr 0.1, minimising -g: theta = 0 + 0.1 * [1, 2] = [0.1, 0.2]
    solver = _solver("solver { optimizer { type: SGD base_lr: 0.1 } sampling { gaussian_sampling { std: 0.5 } } }",
                     [0.0, 0.0])
    eps = np.array([1.0, 2.0], dtype=np.float32)
    infos = [SamplingInfo((9,), 0, False), SamplingInfo((9,), 0, True)]
    stats = solver.update(infos, np.array([3.0, 1.0]), lambda info: eps, {0: solver.snapshot()}, 0)
    np.testing.assert_allclose(solver.params, [0.1, 0.2], rtol=1e-6)
    assert stats["grad_norm"] == pytest.approx(np.sqrt(5.0))


def test_basic_es_raw_fitness_and_l2_by_hand():
    # RAW: w = rewards. theta = [1, -1], std = 1, samples eps_a = [1, 0] (r=2), eps_b = [0, 1] (r=-1), not mirrored.
    # g = (2 * [1, 0] - 1 * [0, 1]) / (2 * 1) = [1, -0.5]; loss grad = -g + 0.1 * theta = [-0.9, 0.4]
    # SGD lr 0.5: theta = [1 + 0.45, -1 - 0.2] = [1.45, -1.2]
    solver = _solver("solver { fitness_shaping: RAW l2_coeff: 0.1 optimizer { type: SGD base_lr: 0.5 } "
                     "sampling { gaussian_sampling { std: 1 } } }", [1.0, -1.0])
    noise = {1: np.array([1.0, 0.0], np.float32), 2: np.array([0.0, 1.0], np.float32)}
    infos = [SamplingInfo((1,), 0), SamplingInfo((2,), 0)]
    solver.update(infos, np.array([2.0, -1.0]), lambda info: noise[info.key[0]], {0: solver.snapshot()}, 0)
    np.testing.assert_allclose(solver.params, [1.45, -1.2], rtol=1e-6)


def test_sample_of_an_older_iteration_by_hand():
    # A sample drawn at iteration 0 (theta_0 = [0, 0]) is applied at iteration 1 (theta = [1, 0]), std 0.5.
    # Its evaluated point theta_0 + 0.5 * eps with eps = [2, 2] is [1, 1]; relative to theta the perturbation is
    # e = eps + (theta_0 - theta) / std = [2, 2] + [-2, 0] = [0, 2]   (= ([1, 1] - [1, 0]) / 0.5).
    # RAW, one sample with reward 1: g = 1 * [0, 2] / (1 * 0.5) = [0, 4]; SGD lr 0.25 -> theta = [1, 1].
    solver = _solver("solver { fitness_shaping: RAW optimizer { type: SGD base_lr: 0.25 } "
                     "sampling { gaussian_sampling { std: 0.5 } } }", [1.0, 0.0])
    warehouse = {0: {"theta": np.array([0.0, 0.0], np.float32)}, 1: solver.snapshot()}
    solver.update([SamplingInfo((5,), 0)], np.array([1.0]), lambda info: np.array([2.0, 2.0], np.float32),
                  warehouse, 1)
    np.testing.assert_allclose(solver.params, [1.0, 1.0], rtol=1e-6)


def test_agent_update_equals_the_estimator_on_evaluated_points(make_config):
    """Through the agent (seeded noise, mixed iterations): the step equals sum_i w_i (x_i - theta) / (N std^2)."""
    agent = ESAgent(Linear([0.5, -0.5, 0.25]), config=make_config(optimizer="SGD", base_lr=0.1, std=0.3,
                                                                  shaping="RAW", mirrored=False))
    agent.init_solver()
    clone = agent.clone()
    old = [clone.add_noise() for _ in range(3)]
    old_points = [agent.candidate_params(i) for i in old]
    agent.update(old, [1.0, 0.0, -1.0])  # iteration 0 -> 1
    theta1 = agent.params.astype(np.float64)
    new = [clone.add_noise() for _ in range(2)]
    new_points = [agent.candidate_params(i) for i in new]
    infos, rewards = old[:2] + new, np.array([0.5, -2.0, 1.5, 3.0])
    points = np.stack(old_points[:2] + new_points).astype(np.float64)
    agent.update(infos, rewards)
    g = (rewards[:, None] * (points - theta1)).sum(0) / (len(rewards) * 0.3**2)
    np.testing.assert_allclose(agent.params, theta1 + 0.1 * g, rtol=1e-5, atol=1e-6)
    assert agent.model_iter_id == 2


def test_mirrored_pairs_and_clone_follows_master(make_config):
    agent = ESAgent(NumpyMLP([3, 4, 2]), config=make_config(std=0.1))
    agent.init_solver()
    clone = agent.clone()
    a = clone.add_noise()
    pa = clone.params
    b = clone.add_noise()
    assert a.key == b.key and (a.negative, b.negative) == (False, True)
    np.testing.assert_allclose(pa - agent.params, agent.params - clone.params, atol=1e-6)
    agent.update([a, b], [1.0, 0.0])
    c = clone.add_noise()
    assert c.model_iter_id == 1 and c.key != a.key and not c.negative
    noise_c = agent.candidate_params(c) - agent.params
    np.testing.assert_allclose(clone.params - agent.params, noise_c, atol=1e-6)


def test_stale_samples_are_dropped_and_all_stale_raises(make_config, caplog):
    agent = ESAgent(Linear([0.0, 0.0]), config=make_config(max_to_keep=2, shaping="RAW"))
    agent.init_solver()
    clone = agent.clone()
    first = clone.add_noise()
    for _ in range(2):
        agent.update([clone.add_noise(), clone.add_noise()], [1.0, 0.0])
    # iteration 0 has left the warehouse (kept: 1, 2)
    fresh = clone.add_noise()
    with caplog.at_level(logging.WARNING, logger="evokit.agent"):
        stats = agent.update([first, fresh], [5.0, 1.0])
    assert stats["num_stale"] == 1 and stats["num_samples"] == 1
    assert "no longer in the model warehouse" in caplog.text
    with pytest.raises(StaleSampleError, match="max_to_keep"):
        agent.update([first], [1.0])


def test_update_input_errors(make_config):
    agent = ESAgent(Linear([0.0, 0.0]), config=make_config())
    with pytest.raises(Exception, match="init_solver"):
        agent.update([SamplingInfo((1,), 0)], [1.0])
    agent.init_solver()
    info = agent.clone().add_noise()
    with pytest.raises(ValueError, match="1 sampling_infos but 2 rewards"):
        agent.update([info], [1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        agent.update([info], [float("nan")])
    with pytest.raises(StaleSampleError, match="iteration 7"):
        agent.update([SamplingInfo((1,), 7)], [1.0])
    with pytest.raises(Exception, match="clone"):
        agent.add_noise()


def test_stale_samples_after_save_and_load_match_in_memory(tmp_path, make_config):
    """The warehouse survives save_solver / load_solver: an offline updater loaded from disk applies samples of
    the previous iteration exactly as the agent that never left memory."""
    config = make_config(optimizer="ADAM", std=0.2, shaping="RANK_CENTERED")
    agent = ESAgent(NumpyMLP([3, 4, 2], seed=2), config=config)
    agent.init_solver()
    clone = agent.clone()
    old = [clone.add_noise() for _ in range(4)]
    agent.update(old, [3.0, 1.0, 2.0, 0.0])
    agent.save_inference_model(tmp_path / "m1")
    agent.save_solver(tmp_path / "m1")
    new = [clone.add_noise() for _ in range(4)]
    infos, rewards = old[:2] + new, [1.0, 5.0, 2.0, 0.5, 4.0, 3.0]
    loaded = ESAgent(config=config).load_inference_model(tmp_path / "m1").load_solver(tmp_path / "m1")
    stats_mem = agent.update(infos, rewards)
    stats_disk = loaded.update(infos, rewards)
    assert stats_mem["num_stale"] == stats_disk["num_stale"] == 0
    np.testing.assert_array_equal(loaded.params, agent.params)
