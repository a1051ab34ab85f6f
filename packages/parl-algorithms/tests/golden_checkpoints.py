"""Checkpoints and pickles written by the two-tree code (before the algorithms were written once) must load.

``python -c "import golden_checkpoints; golden_checkpoints.write()"`` (from this folder; run once, on the old
code) trains each case for two steps per backend, writes ``golden/checkpoints/<backend>-<case>.ckpt``
(``Agent.save``) and ``.pkl`` (``pickle.dumps`` of the algorithm, torch only), then restores each into a fresh
algorithm, runs one more ``learn`` and records its losses and final weight digests in
``golden/checkpoints/expected.json``. ``test_golden_outputs.py`` restores the files into today's classes and
compares that step bit for bit. ``write("OAC", ...)`` writes only the cases named (and keeps the others' files
and records): SAC (fixed and tuned temperature) and CQL were written before SAC was written once; OAC, IQL and
DecisionTransformer before they were; A3C and IMPALA before they were.
"""

from __future__ import annotations

import json
import pathlib
import pickle

import numpy as np
from algo_models import NUM_ACTIONS, OBS_DIM, dt_segments, models, transition
from golden_cases import OFF, _flat, digest

HERE = pathlib.Path(__file__).resolve().parent

CKPT = HERE / "golden" / "checkpoints"


class TorchSACModel(models("torch").SACModel):
    """The test SAC model, at module level so that a pickled algorithm names it."""


class PaddleSACModel(models("paddle").SACModel):
    """The test SAC model, at module level so that a pickled algorithm names it."""


class TorchIQLModel(models("torch").IQLModel):
    """The test IQL model, at module level so that a pickled algorithm names it."""


class PaddleIQLModel(models("paddle").IQLModel):
    """The test IQL model, at module level so that a pickled algorithm names it."""


class TorchACModel(models("torch").DiscreteACModel):
    """The test actor-critic model (A3C, IMPALA), at module level so that a pickled algorithm names it."""


class PaddleACModel(models("paddle").DiscreteACModel):
    """The test actor-critic model (A3C, IMPALA), at module level so that a pickled algorithm names it."""


MODELS = {"torch": {"SACModel": TorchSACModel, "IQLModel": TorchIQLModel, "ACModel": TorchACModel,
                    "DTStepModel": models("torch").DTStepModel},
          "paddle": {"SACModel": PaddleSACModel, "IQLModel": PaddleIQLModel, "ACModel": PaddleACModel,
                     "DTStepModel": models("paddle").DTStepModel}}
# (a paddle algorithm does not pickle: its tensors hold programs; nor does a torch DecisionTransformer: its
# warm-up schedule holds a lambda)
KINDS = {"torch": ("ckpt", "pkl"), "paddle": ("ckpt",)}
NOT_PICKLED = {"DecisionTransformer"}


def _transitions(rng):
    return transition(rng, False, 8, action_bound=0.99)


def _a3c_batch(rng):
    """(obs, actions, advantages, target_values, learning_rate, entropy_coeff) of 8 rows."""
    return (rng.normal(size=(8, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=8),
            rng.normal(size=8).astype(np.float32), rng.normal(size=8).astype(np.float32), 1e-2, -0.01)


def _impala_batch(rng):
    """(obs, actions, behaviour_logits, rewards, dones, learning_rate, entropy_coeff): 2 unrolls of 4 steps."""
    return (rng.normal(size=(8, OBS_DIM)).astype(np.float32), rng.integers(0, NUM_ACTIONS, size=8),
            rng.normal(size=(8, NUM_ACTIONS)).astype(np.float32), rng.normal(size=8).astype(np.float32),
            rng.random(8) < 0.25, 1e-2, -0.01)


# name -> (model, build the algorithm on (models namespace, model), a learn batch from a Generator)
CASES = {
    "SAC": ("SACModel", lambda M, m: M.algs.SAC(m, alpha=0.2, **OFF, device="cpu"), _transitions),
    "SAC-auto-alpha": ("SACModel", lambda M, m: M.algs.SAC(m, with_automatic_entropy_tuning=True, **OFF,
                                                            device="cpu"), _transitions),
    "CQL": ("SACModel", lambda M, m: M.algs.CQL(m, policy_eval_start=1, num_random=2, **OFF, device="cpu"),
            _transitions),
    "OAC": ("SACModel", lambda M, m: M.algs.OAC(m, alpha=0.2, beta=4.66, delta=23.53, **OFF,
                                                with_automatic_entropy_tuning=True, device="cpu"), _transitions),
    "IQL": ("IQLModel", lambda M, m: M.algs.IQL(m, max_steps=6, lr=1e-2, device="cpu"), _transitions),
    "DecisionTransformer": ("DTStepModel", lambda M, m: M.algs.DecisionTransformer(
        m, learning_rate=1e-2, warmup_steps=4, weight_decay=0.1, device="cpu"), lambda rng: dt_segments(rng, 4, 5)),
    "A3C": ("ACModel", lambda M, m: M.algs.A3C(m, vf_loss_coeff=0.5, max_grad_norm=0.5, device="cpu"), _a3c_batch),
    "IMPALA": ("ACModel", lambda M, m: M.algs.IMPALA(m, sample_batch_steps=4, gamma=0.9, max_grad_norm=0.5,
                                                     device="cpu"), _impala_batch),
}


def _kinds(backend, name):
    return tuple(k for k in KINDS[backend] if k != "pkl" or name not in NOT_PICKLED)


def _numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _fresh(backend, name):
    M = models(backend)
    M.ops.seed(0)
    model, build, _ = CASES[name]
    alg = build(M, MODELS[backend][model]())
    return M, alg, M.Agent(alg)


def _step(M, name, alg, agent):
    """One learn on a fixed batch with fixed noise; the record compared with ``golden_cases.mismatches`` (bit for
    bit on the recording machine's kind of CPU; the weights' digests recorded there, their sums as well)."""
    M.ops.seed(5)
    out = _flat(agent.learn(*CASES[name][2](np.random.default_rng(7))))  # (IMPALA's ((losses), kl) flattened)
    weights = {f"{k}.{p}": {"digest": digest(v), "sum": float(np.asarray(v, dtype=np.float64).sum())}
               for k, ps in sorted(alg.get_all_weights().items()) for p, v in sorted(ps.items())}
    record = {"losses": [float(_numpy(x)) for x in out], "weights": weights}
    if hasattr(alg, "alpha"):  # (SAC's temperature; IQL's Polyak rate)
        record["alpha"] = float(alg.alpha)
    return record


def resumed(backend, name, kind):
    """The record of one learn after restoring ``<backend>-<name>.<kind>`` (``ckpt`` or ``pkl``)."""
    path = CKPT / f"{backend}-{name}.{kind}"
    if kind == "ckpt":
        M, alg, agent = _fresh(backend, name)
        agent.restore(str(path))
    else:
        M = models(backend)
        alg = pickle.loads(path.read_bytes())
        agent = M.Agent(alg)
    return _step(M, name, alg, agent)


def write(*names):
    """Write the files and records of the cases ``names`` (default: every case), keeping the others'."""
    names = names or tuple(CASES)
    CKPT.mkdir(parents=True, exist_ok=True)
    for backend in ("torch", "paddle"):
        for name in names:
            M, alg, agent = _fresh(backend, name)
            rng = np.random.default_rng(3)
            for _ in range(2):
                agent.learn(*CASES[name][2](rng))
            agent.save(str(CKPT / f"{backend}-{name}.ckpt"))
            if "pkl" in _kinds(backend, name):
                (CKPT / f"{backend}-{name}.pkl").write_bytes(pickle.dumps(alg))
    path = CKPT / "expected.json"
    expected = json.loads(path.read_text()) if path.exists() else {}
    expected.update({f"{b}-{n}.{k}": resumed(b, n, k) for b in KINDS for n in names for k in _kinds(b, n)})
    path.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
