"""learn2learn's own MAML on the batches bench_maml.py wrote: run in learn2learn's interpreter (Python 3.10 venv
of benchmarks/requirements-maml-l2l.txt) as a subprocess of benchmarks/algorithms/bench_maml.py.

Needs only torch, numpy and learn2learn (no parl package). Reads ``DIR/data.npz`` (meta-batches and test tasks)
and ``DIR/init.pt`` (initial weights), trains ``l2l.algorithms.MAML`` as learn2learn's examples/maml_sine.py does
(``learner = maml.clone()``, ``learner.adapt(loss)`` per inner step, ``loss.backward()`` per task) and writes
``DIR/l2l.json``: test MSE, wall and CPU seconds of the meta-updates, learn2learn / torch / Python versions.

Usage::

    python3.10 benchmarks/algorithms/maml_l2l_worker.py DIR
"""

from __future__ import annotations

import json
import platform
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """bench_maml.Net's 1-40-40-40-1 ReLU MLP (same state_dict keys)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def main(folder: str) -> None:
    import learn2learn as l2l

    torch.set_num_threads(1)
    data = np.load(f"{folder}/data.npz")
    meta = json.loads(str(data["meta"]))
    steps, inner_lr, meta_lr = meta["inner_steps"], meta["inner_lr"], meta["meta_lr"]
    xs, ys, xq, yq = (torch.from_numpy(data[k]) for k in ("xs", "ys", "xq", "yq"))  # [updates, batch, n, 1]
    model = Net()
    model.load_state_dict(torch.load(f"{folder}/init.pt"))
    maml = l2l.algorithms.MAML(model, lr=inner_lr, first_order=False)
    opt = torch.optim.Adam(maml.parameters(), lr=meta_lr)
    wall, cpu = time.perf_counter(), time.process_time()
    for u in range(len(xs)):
        opt.zero_grad()
        for t in range(xs.shape[1]):
            learner = maml.clone()
            for _ in range(steps):
                learner.adapt(F.mse_loss(learner(xs[u, t]), ys[u, t]))
            (F.mse_loss(learner(xq[u, t]), yq[u, t]) / xs.shape[1]).backward()
        opt.step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    errs = []
    txs, tys, txq, tyq = (torch.from_numpy(data[k]) for k in ("test_xs", "test_ys", "test_xq", "test_yq"))
    for t in range(len(txs)):
        learner = maml.clone()
        for _ in range(steps):
            learner.adapt(F.mse_loss(learner(txs[t]), tys[t]))
        with torch.no_grad():
            errs.append(F.mse_loss(learner(txq[t]), tyq[t]).item())
    out = {
        "test_mse": float(np.mean(errs)),
        "wall_s": wall,
        "cpu_s": cpu,
        "learn2learn": l2l.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    with open(f"{folder}/l2l.json", "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: maml_l2l_worker.py DIR (written by bench_maml.py --l2l-python)")
    main(sys.argv[1])
