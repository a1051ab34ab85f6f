"""Golden outputs of the algorithms: fixed seeds, a small model, a few ``learn`` calls on fixed random batches.

``run_case(backend, name)`` returns, for one case on one backend, everything the update sequence produced:
the losses of each ``learn`` call, a digest (sha256 of the float32 bytes) and the sum of every final weight,
``predict`` and ``sample`` outputs on fixed observations (OAC: also its optimistic exploration action; IQL:
``predict`` only; DecisionTransformer: ``predict`` on fixed segments; A3C: also ``value``), the checkpoint's entry
names (a checkpoint written today must load), the temperature of SAC and its subclasses and OAC / IQL / A3C /
IMPALA's ``last_info``.
``golden/record.py`` writes them to ``golden/<backend>.json``; ``test_golden_outputs.py`` recomputes them and
compares bit for bit, so a refactoring of an algorithm that changes one rounding anywhere fails.

Everything runs on the CPU with one torch thread: the digests are of this machine's CPU kernels.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from typing import Any

import numpy as np
from algo_models import NUM_ACTIONS, OBS_DIM, dt_segments, models, ppo_batch, transition

B, STEPS = 16, 3
OFF = dict(gamma=0.99, tau=0.05, actor_lr=1e-3, critic_lr=1e-3)


def _pg_batch(rng):
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=B).astype(np.float32))


def _a2c_batch(rng):
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=B).astype(np.float32), rng.normal(size=B).astype(np.float32))


def _a3c_batch(rng):
    """(obs, actions, advantages, target_values, learning_rate, entropy_coeff)."""
    return (*_a2c_batch(rng), 1e-2, -0.01)


IMPALA_T = 4  # B = 16 rows: 4 unrolls of 4 steps, env-major (PARL)


def _impala_batch(rng):
    """(obs, actions, behaviour_logits, rewards, dones, learning_rate, entropy_coeff)."""
    return (rng.normal(size=(B, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=B),
            rng.normal(size=(B, NUM_ACTIONS)).astype(np.float32), rng.normal(size=B).astype(np.float32),
            rng.random(B) < 0.2, 1e-2, -0.01)


def _transition(rng, discrete):
    return transition(rng, discrete, B, action_bound=0.99)


def _iql_distribution_model(M):
    """IQL's model with PARL's policy style: ``policy(obs)`` returns the framework's ``Normal`` (per-dimension
    log-probabilities, summed by IQL)."""
    if M.ops.name == "torch":
        from torch.distributions import Normal
    else:
        from paddle.distribution import Normal

    class IQLDistributionModel(M.IQLModel):
        def policy(self, obs):
            mean, log_std = super().policy(obs)
            return Normal(mean, log_std.exp())

    return IQLDistributionModel()


# name -> (model class name or a function of the models namespace, build the algorithm on (models namespace,
# model), a learn batch from a Generator)
CASES: dict[str, tuple[Any, Any, Any]] = {
    "PolicyGradient": ("PGModel", lambda M, m, d: M.algs.PolicyGradient(m, lr=1e-2, device=d), _pg_batch),
    "DQN": ("QModel", lambda M, m, d: M.algs.DQN(m, gamma=0.99, lr=1e-2, device=d), lambda r: _transition(r, True)),
    "DDQN": ("QModel", lambda M, m, d: M.algs.DDQN(m, gamma=0.99, lr=1e-2, loss_type="huber", device=d),
             lambda r: _transition(r, True)),
    "DQN-clipped": ("QModel", lambda M, m, d: M.algs.DQN(m, gamma=0.99, lr=1e-2, max_grad_norm=0.1, device=d),
                    lambda r: _transition(r, True)),
    "A2C": ("DiscreteACModel", lambda M, m, d: _a2c(M, m, d), _a2c_batch),
    "PPO-discrete": ("DiscreteACModel", lambda M, m, d: M.algs.PPO(m, initial_lr=1e-2, device=d),
                     lambda r: ppo_batch(r, True, B, logprob_shift=-1.5)),
    "PPO-continuous": ("PPOGaussianModel",
                       lambda M, m, d: M.algs.PPO(m, initial_lr=1e-2, continuous_action=True, device=d),
                       lambda r: ppo_batch(r, False, B, logprob_shift=-1.5)),
    "DDPG": ("DeterministicACModel", lambda M, m, d: M.algs.DDPG(m, **OFF, device=d), lambda r: _transition(r, False)),
    "TD3": ("TwinCriticModel", lambda M, m, d: M.algs.TD3(m, **OFF, device=d), lambda r: _transition(r, False)),
    "SAC": ("SACModel", lambda M, m, d: M.algs.SAC(m, alpha=0.2, **OFF, device=d), lambda r: _transition(r, False)),
    "SAC-auto-alpha": ("SACModel", lambda M, m, d: M.algs.SAC(m, with_automatic_entropy_tuning=True, **OFF, device=d),
                       lambda r: _transition(r, False)),
    "CQL": ("SACModel", lambda M, m, d: M.algs.CQL(m, policy_eval_start=2, num_random=3, **OFF, device=d),
            lambda r: _transition(r, False)),
    "CQL-lagrange-v2": ("SACModel", lambda M, m, d: M.algs.CQL(m, with_lagrange=True, min_q_version=2, num_random=3,
                                                               **OFF, device=d),
                        lambda r: _transition(r, False)),
    "OAC": ("SACModel", lambda M, m, d: M.algs.OAC(m, alpha=0.2, beta=4.66, delta=23.53, **OFF,
                                                   with_automatic_entropy_tuning=True, device=d),
            lambda r: _transition(r, False)),
    "IQL": ("IQLModel", lambda M, m, d: M.algs.IQL(m, max_steps=4, lr=1e-2, device=d), lambda r: _transition(r, False)),
    "IQL-distribution": (_iql_distribution_model, lambda M, m, d: M.algs.IQL(m, max_steps=4, lr=1e-2, tau=0.8,
                                                                             beta=1.0, device=d),
                         lambda r: _transition(r, False)),
    "DecisionTransformer": ("DTStepModel", lambda M, m, d: M.algs.DecisionTransformer(
        m, learning_rate=1e-2, warmup_steps=2, weight_decay=0.1, device=d), lambda r: dt_segments(r, 4, 5)),
    "A3C": ("DiscreteACModel", lambda M, m, d: M.algs.A3C(m, vf_loss_coeff=0.5, device=d), _a3c_batch),
    "A3C-mean-clipped": ("DiscreteACModel", lambda M, m, d: M.algs.A3C(m, vf_loss_coeff=0.5, reduction="mean",
                                                                       max_grad_norm=0.1, device=d), _a3c_batch),
    "A3C-unclipped": ("DiscreteACModel", lambda M, m, d: M.algs.A3C(m, vf_loss_coeff=0.5, max_grad_norm=None,
                                                                    device=d), _a3c_batch),
    "IMPALA": ("DiscreteACModel", lambda M, m, d: M.algs.IMPALA(m, sample_batch_steps=IMPALA_T, gamma=0.9, device=d),
               _impala_batch),
    "IMPALA-clipped-rho": ("DiscreteACModel", lambda M, m, d: M.algs.IMPALA(
        m, sample_batch_steps=IMPALA_T, gamma=0.9, clip_rho_threshold=0.5, clip_pg_rho_threshold=2.0,
        max_grad_norm=0.5, device=d), _impala_batch),
    "IMPALA-unclipped": ("DiscreteACModel", lambda M, m, d: M.algs.IMPALA(
        m, sample_batch_steps=IMPALA_T, gamma=0.9, vf_loss_coeff=1.0, max_grad_norm=None, learning_rate=3e-3,
        device=d), _impala_batch),
}


def _a2c(M, model, device):
    """PARL's two A2C constructors: torch ``A2C(model, config)``, paddle ``A2C(model, vf_loss_coeff)``."""
    if M.ops.name == "torch":
        return M.algs.A2C(model, {"vf_loss_coeff": 0.5, "learning_rate": 1e-2}, device=device)
    return M.algs.A2C(model, vf_loss_coeff=0.5, learning_rate=1e-2, device=device)


def digest(array: np.ndarray) -> str:
    """sha256 of the array's dtype, shape and bytes (the first 16 hex digits)."""
    array = np.ascontiguousarray(array)
    head = f"{array.dtype.str}{array.shape}".encode()
    return hashlib.sha256(head + array.tobytes()).hexdigest()[:16]


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray(value)


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [x for item in out for x in _flat(item)]
    return [out]


def _arrays(out: Any) -> list[dict[str, Any]]:
    return [{"digest": digest(a), "sum": float(np.asarray(a, dtype=np.float64).sum())}
            for a in (_numpy(x) for x in _flat(out))]


#: how far a value may differ from its golden where the bits differ (see :func:`mismatches`)
REL_TOL, ABS_TOL = 1e-5, 1e-6


def mismatches(got: Any, expected: Any, where: str = "") -> list[str]:
    """Where ``got`` differs from the golden ``expected`` (empty: it matches).

    Bit for bit where the CPU is of the kind the goldens were recorded on; but the last bits of a float result
    depend on the CPU's instruction set (MKL's kernels: paddle's results differ between AVX2 and AVX-512 machines)
    and, for paddle, on what the process computed before. So an array whose digest differs matches when its sum is
    within ``REL_TOL`` / ``ABS_TOL`` of the golden's, and so does a float; structure, shapes of the records,
    integers, strings and checkpoint entries must be equal. A change of behaviour moves the sums far beyond that.
    """
    if isinstance(expected, dict) and isinstance(got, dict):
        if set(expected) == {"digest", "sum"} and set(got) == {"digest", "sum"}:
            if got["digest"] == expected["digest"] or math.isclose(got["sum"], expected["sum"], rel_tol=REL_TOL,
                                                                    abs_tol=ABS_TOL):
                return []
            return [f"{where}: sum {got['sum']!r}, golden {expected['sum']!r}"]
        out = [f"{where}.{k}: missing here" for k in sorted(set(expected) - set(got))]
        out += [f"{where}.{k}: not in the golden" for k in sorted(set(got) - set(expected))]
        for key in sorted(set(expected) & set(got)):
            out += mismatches(got[key], expected[key], f"{where}.{key}")
        return out
    if isinstance(expected, list) and isinstance(got, list):
        if len(got) != len(expected):
            return [f"{where}: {len(got)} items, golden {len(expected)}"]
        return [m for i, (g, e) in enumerate(zip(got, expected, strict=True))
                for m in mismatches(g, e, f"{where}[{i}]")]
    if isinstance(expected, float) and isinstance(got, float) and not isinstance(got, bool):
        if math.isclose(got, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL) or math.isnan(got) and math.isnan(expected):
            return []
    elif got == expected:
        return []
    return [f"{where}: {got!r}, golden {expected!r}"]


def run_case(backend: str, name: str) -> dict[str, Any]:
    """The golden record of case ``name`` on ``backend`` (see the module docstring)."""
    M = models(backend)
    model_cls, build, batch = CASES[name]
    M.ops.seed(0)
    if backend == "torch":
        import torch

        torch.set_num_threads(1)
    model = model_cls(M) if callable(model_cls) else getattr(M, model_cls)()
    alg = build(M, model, "cpu")
    agent = M.Agent(alg)
    M.ops.seed(1)
    rng = np.random.default_rng(0)
    losses = [[float(_numpy(x)) for x in _flat(agent.learn(*batch(rng)))] for _ in range(STEPS)]
    weights = {f"{key}.{param}": {"digest": digest(value), "sum": float(value.astype(np.float64).sum())}
               for key, params in sorted(alg.get_all_weights().items()) for param, value in sorted(params.items())}
    record = {"losses": losses, "weights": weights, **_acting(M, name, alg), "checkpoint": sorted(alg.state_dict())}
    if name.startswith(("SAC", "CQL", "OAC")):
        record["alpha"] = float(alg.alpha)
    if name.startswith(("OAC", "IQL", "A3C", "IMPALA")):  # (IMPALA's grad_norm without a clip: the string "nan")
        record["info"] = {key: float(value) if math.isfinite(value) else repr(float(value))
                          for key, value in sorted(alg.last_info.items())}
    return record


def _acting(M, name, alg):
    """``predict`` / ``sample`` outputs of the case's algorithm on fixed inputs."""
    if name == "DecisionTransformer":
        states, actions, rewards, _, rtg, timesteps, _ = dt_segments(np.random.default_rng(2), 5, 5)
        ops = importlib.import_module(f"parl_algorithms.{M.ops.name}.ops")
        tensors = [ops.tensor(x) for x in (states, actions, rewards, rtg[:, :5], timesteps)]
        return {"predict": _arrays(alg.predict(*tensors))}
    obs = np.random.default_rng(2).normal(size=(5, OBS_DIM)).astype(np.float32)
    predict = _arrays(alg.predict(obs))
    if name.startswith("IQL"):  # (no sample: IQL acts by predict)
        return {"predict": predict}
    M.ops.seed(3)
    acting = {"predict": predict, "sample": _arrays(alg.sample(obs))}
    if name.startswith("A3C"):
        acting["value"] = _arrays(alg.value(obs))
    if name == "OAC":
        M.ops.seed(4)
        acting["explore"] = _arrays(alg.get_optimistic_exploration_action(obs))
    return acting
