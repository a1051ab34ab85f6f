"""CMA_ES against the ``cma`` package: the same update as ``cma.purecma`` and comparable convergence to
``cma.CMAEvolutionStrategy`` on a quadratic."""

from __future__ import annotations

import numpy as np
import pytest

from evokit import ESAgent

cma = pytest.importorskip("cma")
from cma.more_algorithms import purecma  # noqa: E402


class Vector:
    """A numpy 'model' that is just a parameter vector."""

    def __init__(self, x):
        self.x = np.asarray(x, dtype=np.float32)

    def get_weights(self):
        return {"x": self.x.copy()}

    def set_weights(self, weights):
        self.x = np.asarray(weights["x"], dtype=np.float32).copy()

    def forward(self, features):
        return self.x


def ellipsoid(x: np.ndarray) -> float:
    """f(x) = sum_i 10^(2i/(n-1)) (x_i - i/n)^2 (condition 100, optimum off the origin)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    return float(np.sum(10 ** (2 * np.arange(n) / (n - 1)) * (x - np.arange(n) / n) ** 2))


def _cma_agent(make_config, x0, sigma0, mirrored=False):
    agent = ESAgent(Vector(x0), config=make_config(solver_type="CMA_ES", std=sigma0, mirrored=mirrored))
    agent.init_solver()
    return agent


def test_update_matches_purecma_exactly(make_config):
    n, lam, sigma0 = 6, 10, 0.5
    x0 = np.linspace(-1, 1, n)
    agent = _cma_agent(make_config, x0, sigma0)
    clone = agent.clone()
    es = purecma.CMAES(list(x0.astype(np.float32).astype(float)), sigma0, popsize=lam)
    for _ in range(25):
        infos = [clone.add_noise() for _ in range(lam)]
        points = [agent.candidate_params(i).astype(np.float64) for i in infos]
        costs = [ellipsoid(p) for p in points]
        es.ask()  # purecma refreshes its eigensystem here (lazily), as ours does at the end of update
        es.tell([list(p) for p in points], costs)
        agent.update(infos, [-c for c in costs])
        solver = agent._solver
        np.testing.assert_allclose(solver.mean, es.xmean, rtol=1e-9, atol=1e-12)
        assert solver.sigma == pytest.approx(es.sigma, rel=1e-9)
        np.testing.assert_allclose(solver.C, np.array(es.C), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(solver.ps, es.ps, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(solver.pc, es.pc, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(agent.params, np.asarray(es.xmean, dtype=np.float32))


def test_converges_on_a_quadratic_like_cma(make_config):
    """Evaluations to reach f < 1e-8 on an 8-D ellipsoid: ours (mirrored samples) within 2x of ``cma``."""
    n, sigma0, target = 8, 0.5, 1e-8
    lam = 4 + int(3 * np.log(n))
    ours = []
    theirs = []
    for seed in range(3):
        agent = _cma_agent(make_config, np.zeros(n), sigma0, mirrored=True)
        agent.config.solver.sampling.gaussian_sampling.seed = seed
        clone = agent.clone(sampler_id=seed)
        evals = 0
        while ellipsoid(agent.params) >= target and evals < 20_000:
            infos = [clone.add_noise() for _ in range(lam)]
            rewards = [-ellipsoid(agent.candidate_params(i)) for i in infos]
            evals += lam
            agent.update(infos, rewards)
        assert ellipsoid(agent.params) < target
        ours.append(evals)
        es = cma.CMAEvolutionStrategy(np.zeros(n), sigma0, {"popsize": lam, "seed": seed + 1, "ftarget": target,
                                                            "verbose": -9, "tolfun": 0, "tolx": 0})
        while not es.stop():
            pts = es.ask()
            es.tell(pts, [ellipsoid(p) for p in pts])
            if ellipsoid(es.mean) < target:
                break
        assert ellipsoid(es.mean) < target
        theirs.append(es.countevals)
    print("evaluations to f < 1e-8: evokit", ours, "cma", theirs)
    assert np.median(ours) <= 2 * np.median(theirs), (ours, theirs)
