"""The update strategies: BASIC_ES (OpenAI ES), CMA_ES and GA, on flat parameter vectors.

A solver knows how to turn a unit-Gaussian noise vector into the candidate parameters of a sample
(:meth:`Solver.candidate`, from a *snapshot* of the iteration that was sampled, so that samples of older model
iterations can be rebuilt) and how to move its state given ``(samples, rewards)`` (:meth:`Solver.update`).
Rewards are maximised.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from evokit.errors import ConfigError
from evokit.optimizers import make_optimizer

__all__ = ["centered_ranks", "shape_fitness", "Solver", "BasicES", "CMAES", "GA", "make_solver"]

Snapshot = dict[str, np.ndarray]
# noise_fn(sampling_info) -> float32 [n] the unit noise of a sample (sign not applied)
NoiseFn = Callable[[object], np.ndarray]


def centered_ranks(rewards: np.ndarray) -> np.ndarray:
    """Rank-centred fitness: ranks scaled to [-0.5, 0.5] (Salimans et al. 2017, ``compute_centered_ranks``).

    Args:
        rewards: float [N] the rewards.

    Returns:
        float64 [N]: ``rank / (N - 1) - 0.5`` with rank 0 for the lowest reward (ties broken by position);
        all zeros when N == 1.
    """
    rewards = np.asarray(rewards, dtype=np.float64).ravel()
    n = rewards.shape[0]
    if n <= 1:
        return np.zeros(n)
    ranks = np.empty(n, dtype=np.float64)
    ranks[np.argsort(rewards, kind="stable")] = np.arange(n, dtype=np.float64)
    return ranks / (n - 1) - 0.5


def shape_fitness(rewards: np.ndarray, kind: str) -> np.ndarray:
    """Apply the config's ``fitness_shaping``: ``"RANK_CENTERED"`` (default) or ``"RAW"`` (rewards as given)."""
    if kind == "RANK_CENTERED":
        return centered_ranks(rewards)
    if kind == "RAW":
        return np.asarray(rewards, dtype=np.float64).ravel()
    raise ConfigError(f"unknown fitness_shaping {kind!r}; use RANK_CENTERED or RAW")


class Solver:
    """Base class.

    Args:
        config: the ``SolverConfig`` message.
        initial_params: float32 [n] the loaded inference model's parameters.
    """

    name = ""
    #: how many extra ints a SamplingInfo key carries after the noise key (GA: the parent index)
    num_extra_keys = 0

    def __init__(self, config, initial_params: np.ndarray) -> None:
        from evokit.config import enum_name

        self.config = config
        self.num_params = int(initial_params.shape[0])
        self.std = float(config.sampling.gaussian_sampling.std)
        self.fitness_shaping = enum_name(config, "fitness_shaping")

    @property
    def params(self) -> np.ndarray:
        """float32 [n] the parameters of the deployed (inference) model."""
        raise NotImplementedError

    def snapshot(self) -> Snapshot:
        """What :meth:`candidate` needs to rebuild this iteration's samples (kept in the model warehouse)."""
        raise NotImplementedError

    def draw_extra(self, rng: np.random.Generator) -> tuple[int, ...]:
        """Draw the extra key ints of a new sample (none for ES and CMA-ES)."""
        return ()

    def candidate(self, snapshot: Snapshot, noise: np.ndarray, negative: bool, extra: tuple[int, ...]) -> np.ndarray:
        """Return float32 [n] the perturbed parameters of one sample."""
        raise NotImplementedError

    def update(self, infos: Sequence, rewards: np.ndarray, noise_fn: NoiseFn,
               warehouse: dict[int, Snapshot], current_iter: int) -> dict[str, float]:
        """Apply one update from samples (possibly of older iterations) and their rewards; return statistics."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, np.ndarray]:
        """The solver's full state (parameters and optimizer or search-distribution state), as named numpy arrays.

        What ``ESAgent.save_solver`` writes; ``load_state_dict`` of a solver of the same kind restores it exactly.
        """
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore the state returned by ``state_dict`` (arrays are copied).

        Raises:
            KeyError: ``state`` lacks an array this solver needs (it came from another kind of solver).
        """
        raise NotImplementedError


class BasicES(Solver):
    """OpenAI evolution strategies (Salimans et al. 2017, arXiv 1703.03864), Algorithm 2 with mirrored sampling.

    A sample of iteration ``k`` evaluated ``theta_k + s * std * eps`` (``s = -1`` for the mirrored half). Relative
    to the current parameters ``theta`` its perturbation is ``e = s * eps + (theta_k - theta) / std`` (EvoKit's
    async mode: the model difference is folded into the noise; ``e = s * eps`` for current samples). The fitness
    gradient estimate is ``g = sum_i w_i * e_i / (N * std)`` with ``w`` the shaped fitness, and the optimizer
    minimises ``-g + l2_coeff * theta``.
    """

    name = "BASIC_ES"

    def __init__(self, config, initial_params: np.ndarray) -> None:
        super().__init__(config, initial_params)
        self.theta = np.asarray(initial_params, dtype=np.float32).copy()
        self.l2_coeff = float(config.l2_coeff)
        self.optimizer = make_optimizer(config.optimizer, self.num_params)

    @property
    def params(self) -> np.ndarray:
        return self.theta

    def snapshot(self) -> Snapshot:
        return {"theta": self.theta.copy()}

    def candidate(self, snapshot: Snapshot, noise: np.ndarray, negative: bool, extra: tuple[int, ...]) -> np.ndarray:
        scale = -self.std if negative else self.std
        return (snapshot["theta"] + np.float32(scale) * noise).astype(np.float32, copy=False)

    def gradient(self, infos: Sequence, weights: np.ndarray, noise_fn: NoiseFn,
                 warehouse: dict[int, Snapshot]) -> np.ndarray:
        """float64 [n] the fitness-ascent estimate ``sum_i w_i e_i / (N * std)`` (see the class docstring)."""
        n_samples = len(infos)
        g = np.zeros(self.num_params, dtype=np.float64)
        weight_per_iter: dict[int, float] = {}
        for info, w in zip(infos, weights, strict=True):
            g += (-w if info.negative else w) * noise_fn(info)
            weight_per_iter[info.model_iter_id] = weight_per_iter.get(info.model_iter_id, 0.0) + float(w)
        for it, w_sum in weight_per_iter.items():
            diff = warehouse[it]["theta"].astype(np.float64) - self.theta.astype(np.float64)
            if w_sum != 0.0 and np.any(diff):
                g += w_sum * diff / self.std
        return g / (n_samples * self.std)

    def update(self, infos: Sequence, rewards: np.ndarray, noise_fn: NoiseFn,
               warehouse: dict[int, Snapshot], current_iter: int) -> dict[str, float]:
        weights = shape_fitness(rewards, self.fitness_shaping)
        g = self.gradient(infos, weights, noise_fn, warehouse)
        loss_grad = -g + self.l2_coeff * self.theta.astype(np.float64)
        new = self.optimizer.step(self.theta, loss_grad)
        step = float(np.linalg.norm(new.astype(np.float64) - self.theta))
        self.theta = new
        return {"grad_norm": float(np.linalg.norm(g)), "step_norm": step}

    def state_dict(self) -> dict[str, np.ndarray]:
        out = {"theta": self.theta}
        out.update({f"opt_{k}": v for k, v in self.optimizer.state_dict().items()})
        return out

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        self.theta = np.asarray(state["theta"], dtype=np.float32).copy()
        self.optimizer.load_state_dict({k[4:]: v for k, v in state.items() if k.startswith("opt_")})


class _CMAParams:
    """The static strategy parameters of CMA-ES for dimension ``n`` and population ``lam``.

    Hansen, "The CMA Evolution Strategy: A Tutorial" (arXiv 1604.00772), with the defaults of ``cma.purecma``
    (``CMAESParameters`` with positive weights only).
    """

    def __init__(self, n: int, lam: int) -> None:
        self.lam = lam
        self.mu = lam // 2
        raw = np.array([math.log(lam / 2 + 0.5) - math.log(i + 1) for i in range(self.mu)])
        self.weights = raw / raw.sum()
        self.mueff = self.weights.sum() ** 2 / (self.weights ** 2).sum()
        self.cc = (4 + self.mueff / n) / (n + 4 + 2 * self.mueff / n)
        self.cs = (self.mueff + 2) / (n + self.mueff + 5)
        self.c1 = 2 / ((n + 1.3) ** 2 + self.mueff)
        self.cmu = min(1 - self.c1, 2 * (self.mueff - 2 + 1 / self.mueff) / ((n + 2) ** 2 + self.mueff))
        self.damps = 2 * self.mueff / lam + 0.3 + self.cs
        self.lazy_gap_evals = 0.5 * n * lam * (self.c1 + self.cmu) ** -1 / n ** 2


class CMAES(Solver):
    """CMA-ES (Hansen 2016 tutorial), the update of ``cma.purecma.CMAES.tell``, with compact samples.

    A sample is ``x = m + sigma * B (d * z)``, ``z`` the sample's unit noise (negated when mirrored), ``B, d`` the
    eigenbasis and square-rooted eigenvalues of ``C`` at the sampled iteration. The update ranks the samples by
    reward (maximised; ``cma`` minimises ``-reward``) and moves mean, paths, ``C`` and ``sigma`` exactly as
    ``purecma``'s ``tell`` does for the same points; the eigendecomposition is refreshed lazily with purecma's
    ``lazy_gap_evals``. The initial step size is ``gaussian_sampling.std``; the population is the number of
    samples passed to ``update``. Memory is O(n^2): meant for models up to ~10^4 parameters.
    """

    name = "CMA_ES"

    def __init__(self, config, initial_params: np.ndarray) -> None:
        super().__init__(config, initial_params)
        n = self.num_params
        self.mean = np.asarray(initial_params, dtype=np.float64).copy()
        self.sigma = self.std
        self.C = np.eye(n)
        self.pc = np.zeros(n)
        self.ps = np.zeros(n)
        self.eigenbasis = np.eye(n)
        self.eigenvalues = np.ones(n)
        self.invsqrt = np.eye(n)
        self.counteval = 0
        self.updated_eval = 0
        self._deployed = self.mean.astype(np.float32)

    @property
    def params(self) -> np.ndarray:
        return self._deployed

    def snapshot(self) -> Snapshot:
        return {"mean": self.mean.copy(), "sigma": np.asarray(self.sigma),
                "bd": self.eigenbasis * np.sqrt(self.eigenvalues)[None, :]}

    def candidate(self, snapshot: Snapshot, noise: np.ndarray, negative: bool, extra: tuple[int, ...]) -> np.ndarray:
        z = -noise.astype(np.float64) if negative else noise.astype(np.float64)
        return (snapshot["mean"] + float(snapshot["sigma"]) * (snapshot["bd"] @ z)).astype(np.float32)

    def tell(self, arx: np.ndarray, fitvals: np.ndarray) -> None:
        """The CMA-ES update for points ``arx`` float64 [lam, n] and costs ``fitvals`` [lam] (minimised)."""
        lam, n = arx.shape
        par = _CMAParams(n, lam)
        self.counteval += lam
        xold = self.mean
        arx = arx[np.argsort(fitvals, kind="stable")]
        self.mean = par.weights @ arx[:par.mu]
        y = self.mean - xold
        z = self.invsqrt @ y
        csn = math.sqrt(par.cs * (2 - par.cs) * par.mueff) / self.sigma
        self.ps = (1 - par.cs) * self.ps + csn * z
        ccn = math.sqrt(par.cc * (2 - par.cc) * par.mueff) / self.sigma
        hsig = float((self.ps @ self.ps) / n / (1 - (1 - par.cs) ** (2 * self.counteval / par.lam))
                     < 2 + 4.0 / (n + 1))
        self.pc = (1 - par.cc) * self.pc + ccn * hsig * y
        c1a = par.c1 * (1 - (1 - hsig ** 2) * par.cc * (2 - par.cc))
        self.C *= 1 - c1a - par.cmu * par.weights.sum()
        self.C += par.c1 * np.outer(self.pc, self.pc)
        dx = arx[:par.mu] - xold
        self.C += (par.cmu / self.sigma ** 2) * (dx.T * par.weights) @ dx
        cn = par.cs / par.damps
        self.sigma *= math.exp(min(1.0, cn * ((self.ps @ self.ps) / n - 1) / 2))
        self._update_eigensystem(par.lazy_gap_evals)
        self._deployed = self.mean.astype(np.float32)

    def _update_eigensystem(self, lazy_gap_evals: float) -> None:
        if self.counteval <= self.updated_eval + lazy_gap_evals:
            return
        self.C = (self.C + self.C.T) / 2
        eigenvalues, eigenbasis = np.linalg.eigh(self.C)
        if eigenvalues.min() <= 0:
            raise FloatingPointError(f"CMA-ES covariance lost positive definiteness after {self.counteval} "
                                     "evaluations; lower gaussian_sampling.std or rescale the rewards")
        self.eigenvalues, self.eigenbasis = eigenvalues, eigenbasis
        self.invsqrt = (eigenbasis / np.sqrt(eigenvalues)[None, :]) @ eigenbasis.T
        self.updated_eval = self.counteval

    def update(self, infos: Sequence, rewards: np.ndarray, noise_fn: NoiseFn,
               warehouse: dict[int, Snapshot], current_iter: int) -> dict[str, float]:
        if len(infos) < 2:
            raise ValueError("CMA_ES needs at least 2 samples per update")
        arx = np.stack([self.candidate(warehouse[i.model_iter_id], noise_fn(i), i.negative, ())
                        for i in infos]).astype(np.float64)
        self.tell(arx, -np.asarray(rewards, dtype=np.float64))
        return {"sigma": float(self.sigma)}

    _STATE = ("mean", "C", "pc", "ps", "eigenbasis", "eigenvalues", "invsqrt")

    def state_dict(self) -> dict[str, np.ndarray]:
        out = {k: getattr(self, k) for k in self._STATE}
        out.update(sigma=np.asarray(self.sigma), counteval=np.asarray(self.counteval),
                   updated_eval=np.asarray(self.updated_eval))
        return out

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        for k in self._STATE:
            setattr(self, k, np.asarray(state[k], dtype=np.float64).copy())
        self.sigma = float(state["sigma"])
        self.counteval = int(state["counteval"])
        self.updated_eval = int(state["updated_eval"])
        self._deployed = self.mean.astype(np.float32)


class GA(Solver):
    """A simple genetic algorithm: Gaussian mutation of elites and truncation selection with elitism.

    Such, Madhavan et al. 2017 ("Deep Neuroevolution", arXiv 1712.06567) without crossover. A sample mutates
    parent elite ``p`` (its key is ``(noise_key, p)``): ``x = elite_p + s * std * eps``. The update keeps the
    ``elite_size`` best of the samples and of the previous elites (with the rewards they earned when sampled);
    the deployed model is the best elite.
    """

    name = "GA"
    num_extra_keys = 1

    def __init__(self, config, initial_params: np.ndarray) -> None:
        super().__init__(config, initial_params)
        self.elite_size = int(config.ga.elite_size)
        self.elites = np.asarray(initial_params, dtype=np.float32)[None, :].copy()
        self.elite_rewards = np.array([-np.inf])

    @property
    def params(self) -> np.ndarray:
        return self.elites[0]

    def snapshot(self) -> Snapshot:
        return {"elites": self.elites.copy()}

    def draw_extra(self, rng: np.random.Generator) -> tuple[int, ...]:
        return (int(rng.integers(0, self.elites.shape[0])),)

    def candidate(self, snapshot: Snapshot, noise: np.ndarray, negative: bool, extra: tuple[int, ...]) -> np.ndarray:
        elites = snapshot["elites"]
        if len(extra) != 1 or not 0 <= extra[0] < elites.shape[0]:
            raise ValueError(f"a GA sample needs key (noise_key, parent) with parent < {elites.shape[0]}, got extra "
                             f"{extra}")
        scale = -self.std if negative else self.std
        return (elites[extra[0]] + np.float32(scale) * noise).astype(np.float32, copy=False)

    def update(self, infos: Sequence, rewards: np.ndarray, noise_fn: NoiseFn,
               warehouse: dict[int, Snapshot], current_iter: int) -> dict[str, float]:
        cands = np.stack([self.candidate(warehouse[i.model_iter_id], noise_fn(i), i.negative, i.key[1:])
                          for i in infos])
        pool = np.concatenate([cands, self.elites])
        pool_rewards = np.concatenate([np.asarray(rewards, dtype=np.float64), self.elite_rewards])
        order = np.argsort(-pool_rewards, kind="stable")[:self.elite_size]
        order = order[np.isfinite(pool_rewards[order])]
        self.elites = pool[order].copy()
        self.elite_rewards = pool_rewards[order].copy()
        return {"best_reward": float(self.elite_rewards[0])}

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"elites": self.elites, "elite_rewards": self.elite_rewards}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        self.elites = np.asarray(state["elites"], dtype=np.float32).copy()
        self.elite_rewards = np.asarray(state["elite_rewards"], dtype=np.float64).copy()


_SOLVERS = {cls.name: cls for cls in (BasicES, CMAES, GA)}


def make_solver(solver_config, initial_params: np.ndarray) -> Solver:
    """Build the solver named by ``solver_config.type``."""
    from evokit.config import enum_name

    kind = enum_name(solver_config, "type")
    if kind not in _SOLVERS:  # pragma: no cover - the schema's enum forbids it
        raise ConfigError(f"unknown solver type {kind!r}; use one of {sorted(_SOLVERS)}")
    return _SOLVERS[kind](solver_config, initial_params)
