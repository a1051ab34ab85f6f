"""MAML and MAML++ on few-shot sine-wave regression with parl_algorithms.torch.MAML.

Setting (PARL 2.2.1 ``benchmark/torch/maml++``, after Meta-SGD): 5-shot tasks y = A sin(w x + b), A in
[0.1, 5], b in [0, pi], w in [0.8, 1.2], x in [-5, 5]; network 1-40-40-40-1 ReLU (3 hidden layers of 40,
Kaiming-normal weights, zero biases); 3 inner SGD steps; a fixed pool of 1600 training tasks of 15 points,
re-split at every visit into 5 support and 10 query points; meta-batches of 16 tasks; Adam 1e-3;
80 epochs of 500 meta-updates; test: 10,000 new tasks, 5 support and 100 query points each, the query MSE
after adaptation averaged over tasks (+- the 95% interval over 100 batches of 100 tasks, as PARL).

Algorithm box (Finn et al. 2017; Antoniou et al. 2019 for ``--algo maml++``)::

    for epoch in 0 .. epochs-1, for each of iters-per-epoch meta-batches of T tasks:
        for each task (vmapped): theta_0 = theta; theta_{s+1} = theta_s - alpha_s grad MSE_support(theta_s)
        meta-loss = mean over tasks of sum_s v_s(epoch) MSE_query(theta_s)   (v = last step only for MAML)
        Adam step on theta (and on alpha with learnable per-layer per-step rates, MAML++)
    after every epoch: test MSE on the 10,000 test tasks

``--algo maml``: fixed inner lr 0.001 (PARL's task learning rate; Finn et al.'s 0.01 diverged to inf
with this 3-hidden-layer network and 3 steps, measured), second order, constant meta lr.
``--algo maml++``: PARL's MAML++ config: learnable per-layer per-step inner lrs from 0.001, multi-step
loss for 10 epochs, derivative-order annealing (first order for the first half of the epochs, the epoch
PARL's config names), cosine annealing of the meta lr to 1e-5; ``--per-step-bn`` adds MAML++'s per-step
batch-normalisation weights and biases (batch statistics; off by default as in PARL's network).

Usage::

    python examples/maml/train.py --algo maml --seed 0 --logdir runs/maml/maml-seed0
    python examples/maml/train.py --algo maml++ --seed 0 --logdir runs/maml/mamlpp-seed0
    python examples/maml/train.py --algo maml++ --restore runs/maml/mamlpp-seed0/checkpoint.pt  # resume

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/maml/train.py --algo maml++ --seed 0 --resume runs/maml/mamlpp-seed0

Writes ``<logdir>/summary.json``, ``<logdir>/curve.csv`` (epoch, meta_updates, wall_s, train_query_mse,
test_mse, test_mse_ci95), tensorboard scalars, ``<logdir>/checkpoint.pt`` (after every epoch: the algorithm,
epoch, curve and sampler state, which ``--restore`` continues from, in the same or another folder) and
``<logdir>/checkpoint.npz`` every ``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end (see
docs/long_runs.md), between two meta-updates: the network, the inner learning rates, Adam's state, the task
sampler's generator, the epoch and meta-update counters and the epoch's training losses so far, from which
``--resume DIR`` continues bit for bit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from parl.utils import Checkpointer, RunLog, add_run_args, atomic_write
from parl_algorithms.sine_tasks import SineTaskDistribution
from parl_algorithms.torch.maml import MAML  # torch only: not parl.algorithms.MAML, which follows PARL_BACKEND
from parl_core.torch import Model

NETWORK = (40, 40, 40)
INNER_STEPS = 3
META_BATCH = 16
META_LR = 1e-3
EPOCHS = 80
ITERS_PER_EPOCH = 500
TRAIN_TASKS = 1600
SUPPORT, TRAIN_QUERY, TEST_QUERY = 5, 10, 100
TEST_TASKS = 10_000
TEST_BATCHES = 100  # PARL's confidence interval is over the means of 100 batches of 100 tasks
CURVE_COLUMNS = ("epoch", "meta_updates", "wall_s", "train_query_mse", "test_mse", "test_mse_ci95")


class SineMLP(Model):
    """ReLU MLP ``1 -> hidden -> 1``; ``forward(x, step)`` with ``x`` float32 ``[N, 1]`` -> ``[N, 1]``.

    With ``per_step_bn=S`` (MAML++ BNWB), each hidden layer is followed by a batch normalisation over the
    ``N`` rows (the task's points, batch statistics) whose scale and shift are chosen by ``step`` (0..S);
    those are meta-learned and not adapted in the inner loop (``inner_parameter_names``).
    """

    def __init__(self, hidden: tuple[int, ...] = NETWORK, per_step_bn: int = 0) -> None:
        super().__init__()
        dims = (1, *hidden, 1)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        for layer in self.layers:  # PARL's initialisation
            nn.init.kaiming_normal_(layer.weight)
            nn.init.zeros_(layer.bias)
        self.per_step_bn = per_step_bn
        if per_step_bn:
            self.bn_scale = nn.ParameterList(nn.Parameter(torch.ones(per_step_bn + 1, h)) for h in hidden)
            self.bn_shift = nn.ParameterList(nn.Parameter(torch.zeros(per_step_bn + 1, h)) for h in hidden)

    def inner_parameter_names(self) -> list[str]:
        return [name for name, _ in self.named_parameters() if name.startswith("layers.")]

    def forward(self, x: torch.Tensor, step: int = 0) -> torch.Tensor:
        for i, layer in enumerate(self.layers[:-1]):
            x = layer(x)
            if self.per_step_bn:
                x = F.layer_norm(x.transpose(-1, -2), x.shape[-2:-1]).transpose(-1, -2)  # over the N rows
                x = x * self.bn_scale[i][step] + self.bn_shift[i][step]
            x = F.relu(x)
        return self.layers[-1](x)


def evaluate(alg, test_tasks, device) -> tuple[float, float]:
    """Mean query MSE over the test tasks after adaptation, and PARL's 95% interval over batch means."""
    batch_means = []
    for idx in np.array_split(np.arange(len(test_tasks)), TEST_BATCHES):
        t = test_tasks[idx]
        xs, ys, xq, yq = (torch.from_numpy(a).to(device) for a in (t.x_support, t.y_support, t.x_query, t.y_query))
        pred = alg.adapt_predict(xs, ys, xq)
        batch_means.append(((pred - yq) ** 2).mean(dim=(1, 2)).mean().item())
    batch_means = np.asarray(batch_means)
    return float(batch_means.mean()), float(1.96 * batch_means.std(ddof=1) / math.sqrt(len(batch_means)))


def build(args, device) -> MAML:
    pp = args.algo == "maml++"
    model = SineMLP(tuple(args.hidden_sizes), per_step_bn=args.inner_steps if args.per_step_bn else 0)
    return MAML(
        model,
        inner_lr=args.inner_lr,
        num_inner_steps=args.inner_steps,
        meta_lr=args.meta_lr,
        first_order=args.first_order,
        learnable_inner_lr=pp,
        multi_step_loss_epochs=10 if pp else 0,
        first_order_epochs=args.epochs // 2 if pp else 0,
        total_epochs=args.epochs if pp else None,
        min_meta_lr=min(1e-5, args.meta_lr),
        device=device,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", choices=("maml", "maml++"), default="maml++")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/maml/<algo>-seed<seed>")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--iters-per-epoch", type=int, default=ITERS_PER_EPOCH)
    parser.add_argument("--meta-batch-size", type=int, default=META_BATCH)
    parser.add_argument("--inner-steps", type=int, default=INNER_STEPS)
    parser.add_argument("--inner-lr", type=float, default=1e-3, help="inner SGD step (initial value for maml++)")
    parser.add_argument("--meta-lr", type=float, default=META_LR)
    parser.add_argument("--first-order", action="store_true", help="first-order MAML throughout")
    parser.add_argument("--per-step-bn", action="store_true", help="MAML++ per-step batch-norm weights")
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=list(NETWORK))
    parser.add_argument(
        "--train-tasks",
        type=int,
        default=TRAIN_TASKS,
        help="size of the fixed training pool (PARL); 0 draws new tasks for every meta-batch",
    )
    parser.add_argument("--test-tasks", type=int, default=TEST_TASKS)
    parser.add_argument("--restore", default=None,
                        help="a checkpoint.pt written by an earlier run: continue after its last epoch")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    for name in ("epochs", "iters_per_epoch", "meta_batch_size", "inner_steps", "test_tasks"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.test_tasks < TEST_BATCHES:
        parser.error(f"--test-tasks must be >= {TEST_BATCHES} (the interval is over {TEST_BATCHES} batches)")
    if args.train_tasks < 0 or 0 < args.train_tasks < args.meta_batch_size:
        parser.error(
            f"--train-tasks must be 0 (fresh tasks) or >= --meta-batch-size ({args.meta_batch_size}), "
            f"got {args.train_tasks}"
        )
    if args.restore and not os.path.isfile(args.restore):
        parser.error(f"--restore {args.restore}: no such file; pass the checkpoint.pt of an earlier run")
    torch.set_num_threads(1)
    logdir = args.resume or args.logdir or os.path.join("runs", "maml", f"{args.algo}-seed{args.seed}")
    run = RunLog(logdir)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    tasks = SineTaskDistribution()
    test_tasks = tasks.sample(args.test_tasks, SUPPORT, TEST_QUERY, np.random.default_rng(10_000 + args.seed))
    pool = tasks.sample(args.train_tasks, SUPPORT, TRAIN_QUERY, rng) if args.train_tasks else None
    try:
        alg = build(args, args.device)
    except ValueError as err:
        parser.error(str(err))
    device = alg.device

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(alg=alg, rng=rng)
    # epoch / iteration: the meta-update in progress; curve: the rows of curve.csv, for checkpoint.pt;
    # wall_before: the wall clock of the epochs of a --restore'd run
    c = ckpt.track(epoch=0, iteration=0, train_mse=[], curve=[], wall_before=0.0)
    ckpt.start()  # (a resumed run continues from its checkpoint: network, inner lrs, Adam, sampler, counters)
    if args.restore and not ckpt.resumed:
        state = torch.load(args.restore, map_location=device, weights_only=True)  # (plain containers: no code runs)
        alg.load_state_dict(state["algorithm"])
        rng.bit_generator.state = state["rng"]
        c.epoch, c.wall_before = state["epoch"], state["wall_s"]
        c.curve = [dict(zip(CURVE_COLUMNS, values, strict=True)) for values in state["curve"]]
        for row in c.curve:
            run.row(row)

    def wall() -> float:
        return c.wall_before + run.elapsed()

    bar = tqdm(
        total=args.epochs * args.iters_per_epoch,
        initial=c.epoch * args.iters_per_epoch + c.iteration,
        disable=args.no_progress,
        unit="meta-update",
    )
    for epoch in range(c.epoch, args.epochs):
        while c.iteration < args.iters_per_epoch:
            ckpt.maybe_save(epoch * args.iters_per_epoch + c.iteration)  # between two meta-updates
            if pool is not None:
                batch = tasks.resplit(pool[rng.choice(len(pool), args.meta_batch_size, replace=False)], SUPPORT, rng)
            else:
                batch = tasks.sample(args.meta_batch_size, SUPPORT, TRAIN_QUERY, rng)
            alg.learn(
                *(
                    torch.from_numpy(a).to(device)
                    for a in (batch.x_support, batch.y_support, batch.x_query, batch.y_query)
                ),
                epoch=epoch,
            )
            c.train_mse.append(alg.last_info["train/query_mse"])
            c.iteration += 1
            bar.update(1)
        step = (epoch + 1) * args.iters_per_epoch
        for key, value in alg.last_info.items():
            run.scalar(key, value, step)
        test_mse, ci = evaluate(alg, test_tasks, device)
        run.scalar("test/mse", test_mse, step)
        row = dict(zip(CURVE_COLUMNS, [epoch + 1, step, round(wall(), 3), float(np.mean(c.train_mse)), test_mse, ci],
                       strict=True))
        c.curve.append(row)
        run.row(row)
        c.epoch, c.iteration, c.train_mse = epoch + 1, 0, []
        bar.set_postfix(test_mse=f"{test_mse:.3f}")
        with atomic_write(os.path.join(logdir, "checkpoint.pt")) as f:  # (whole or not at all, if killed)
            torch.save(
                {
                    "algorithm": alg.state_dict(),
                    "epoch": c.epoch,
                    "curve": [list(r.values()) for r in c.curve],
                    "wall_s": wall(),
                    "rng": rng.bit_generator.state,
                },
                f,
            )
    bar.close()
    test_mse, ci = (c.curve[-1]["test_mse"], c.curve[-1]["test_mse_ci95"]) if c.curve else (float("nan"), float("nan"))
    run.close()
    result = {
        "algo": args.algo,
        "seed": args.seed,
        "device": str(device),
        "test_mse": test_mse,
        "test_mse_ci95": ci,
        "test_tasks": args.test_tasks,
        "epochs": args.epochs,
        "meta_updates": args.epochs * args.iters_per_epoch,
        "meta_batch_size": args.meta_batch_size,
        "inner_steps": args.inner_steps,
        "inner_lr_final": alg.inner_lrs.detach().cpu().tolist(),
        "per_step_bn": args.per_step_bn,
        "first_order": args.first_order,
        "train_tasks": args.train_tasks,
        "wall_s": round(wall(), 3),
        "cpu_s": round(time.process_time(), 3),
    }
    with atomic_write(os.path.join(logdir, "summary.json"), "w") as f:
        json.dump(result, f, indent=2)
    ckpt.finish(args.epochs * args.iters_per_epoch)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
