"""Checkpoints and pickles written by the two-tree code (before the algorithms were written once) must load.

``python -c "import golden_checkpoints; golden_checkpoints.write()"`` (from this folder; run once, on the old
code) trains SAC (fixed and tuned temperature) and CQL for two steps per backend, writes
``golden/checkpoints/<backend>-<case>.ckpt`` (``Agent.save``) and ``.pkl`` (``pickle.dumps`` of the algorithm,
torch only), then restores each into a fresh algorithm, runs one more ``learn`` and records its losses and final
weight digests in ``golden/checkpoints/expected.json``. ``test_golden_outputs.py`` restores the files into
today's classes and compares that step bit for bit.
"""

from __future__ import annotations

import json
import pathlib
import pickle

import numpy as np
from algo_models import models, transition
from golden_cases import OFF, digest

HERE = pathlib.Path(__file__).resolve().parent

CKPT = HERE / "golden" / "checkpoints"


class TorchSACModel(models("torch").SACModel):
    """The test SAC model, at module level so that a pickled algorithm names it."""


class PaddleSACModel(models("paddle").SACModel):
    """The test SAC model, at module level so that a pickled algorithm names it."""


MODELS = {"torch": TorchSACModel, "paddle": PaddleSACModel}
# (a paddle algorithm does not pickle: its tensors hold programs)
KINDS = {"torch": ("ckpt", "pkl"), "paddle": ("ckpt",)}
CASES = {
    "SAC": lambda M, m: M.algs.SAC(m, alpha=0.2, **OFF, device="cpu"),
    "SAC-auto-alpha": lambda M, m: M.algs.SAC(m, with_automatic_entropy_tuning=True, **OFF, device="cpu"),
    "CQL": lambda M, m: M.algs.CQL(m, policy_eval_start=1, num_random=2, **OFF, device="cpu"),
}


def _numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _fresh(backend, name):
    M = models(backend)
    M.ops.seed(0)
    alg = CASES[name](M, MODELS[backend]())
    return M, alg, M.Agent(alg)


def _step(M, alg, agent):
    """One learn on a fixed batch with fixed noise; the record compared bit for bit."""
    M.ops.seed(5)
    out = agent.learn(*transition(np.random.default_rng(7), False, 8, action_bound=0.99))
    out = out if isinstance(out, (tuple, list)) else (out,)
    weights = {f"{k}.{p}": digest(v) for k, ps in sorted(alg.get_all_weights().items()) for p, v in sorted(ps.items())}
    return {"losses": [float(_numpy(x)) for x in out], "weights": weights, "alpha": float(alg.alpha)}


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
    return _step(M, alg, agent)


def write():
    CKPT.mkdir(parents=True, exist_ok=True)
    for backend in ("torch", "paddle"):
        for name in CASES:
            M, alg, agent = _fresh(backend, name)
            rng = np.random.default_rng(3)
            for _ in range(2):
                agent.learn(*transition(rng, False, 8, action_bound=0.99))
            agent.save(str(CKPT / f"{backend}-{name}.ckpt"))
            if "pkl" in KINDS[backend]:
                (CKPT / f"{backend}-{name}.pkl").write_bytes(pickle.dumps(alg))
    expected = {f"{b}-{n}.{k}": resumed(b, n, k) for b in KINDS for n in CASES for k in KINDS[b]}
    (CKPT / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
