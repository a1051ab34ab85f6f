"""Whole-program P1 figure: PARL 2.2.1's own example programs, unchanged, on PARL 2.2.1 and on this project.

The programs are the files vendored unchanged in ``tests/parl2/examples`` (``NOTICE.md``): QuickStart (policy
gradient on CartPole-v1), DQN (CartPole-v0) and DDPG (its MuJoCo path on Pendulum-v1 through its ``--env``
flag). Each run executes one program's ``train.py`` in a fresh process (``--child``), as
``tests/parl2/run_course.py`` does: the file is executed as a module, its ``argparse`` namespace ``args`` and
module constants (DDPG's ``WARMUP_STEPS``) are set from outside, ``import gym`` is served by
``tests/parl2/shims`` (gymnasium through the old gym API; the same env code on every side), and ``main()`` is
called. Nothing in the program is edited; the runner only

- seeds ``random``, ``numpy`` and ``paddle`` with ``--seeds`` and each env made by ``gym.make`` (the k-th env of
  a run gets ``seed * 1000 + k``; DDPG then seeds its own env with its ``--seed`` flag, set to the same seed),
- counts env steps and episodes by wrapping ``env.step`` / ``env.reset`` of every env ``gym.make`` returns
  (the first env made is the training env of QuickStart and DQN; DDPG trains and evaluates on one env, so its
  "train" steps and episodes include its evaluation episodes),
- stops the run (as finished) at the first evaluation message whose reward reaches ``--threshold``
  (QuickStart's ``Test reward: X`` every 100 episodes, DQN's ``Test reward:X`` every 50), since these
  programs have no threshold of their own; DDPG runs its fixed step budget. QuickStart (at most 1000
  episodes) and DQN (at most 800, its default) are also stopped at 40,000 / 20,000 training env steps, which
  keeps a run under a minute here (reported as not reached).
- compiles nothing twice: ``--pycache-prefix DIR`` gives the children ``PYTHONPYCACHEPREFIX=DIR`` (and drops
  ``PYTHONDONTWRITEBYTECODE``) so that paddle's modules imported lazily inside the loop (its backward pass on
  the first ``learn``) are not compiled from source on one side only; one untimed 3-episode QuickStart run
  per side fills that cache first.

Sides (``--sides``): ``parl221`` = PARL 2.2.1 + paddlepaddle 2.6.2 (``--parl-python``, the venv of
``benchmarks/requirements-parl221.txt``; our ``parl-core`` sources are on its path only for the gym shim's
``Wrapper``), ``ours331`` = this tree's packages on the running interpreter's paddle (3.3.1 here),
``ours262`` = this tree's packages first on the path of ``--parl-python`` (paddle 2.6.2). Every child runs
with ``PARL_BACKEND=paddle`` and ``OMP_NUM_THREADS=1``. Runs alternate sides (the order rotates every seed).

Reported per program and side (medians and minima over seeds): training env steps (and episodes) to the
threshold, wall seconds from the end of the first env step to the end of the last (the program's own loop:
acting, learning, evaluation; imports, model building and the final checkpoint writes excluded), ms per env
step (that wall over all env steps, evaluation included) and the ratios PARL / ours.

``--acting`` times instead the acting step of the vendored QuickStart and DQN agents (their own ``Agent``
subclasses: numpy obs -> ``paddle.to_tensor`` -> ``alg.predict`` -> numpy) in one process per side; on our
sides it alternates, call block by call block, the agent class as is (``predict`` / ``sample`` without
autograd) and a subclass with ``no_grad_methods = ()`` (with autograd: the behaviour before that change).

Usage (``chrt -f 5`` for timing runs on a shared machine; each child stays under a minute at these budgets)::

    chrt -f 5 python benchmarks/algorithms/bench_parl_programs.py --parl-python /tmp/parl221/bin/python \\
        --programs quickstart dqn ddpg --seeds 0 1 2
    chrt -f 5 python benchmarks/algorithms/bench_parl_programs.py --acting \\
        --parl-python /tmp/parl221/bin/python
    python benchmarks/algorithms/bench_parl_programs.py --dry-run --parl-python /tmp/parl221/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "tests" / "parl2" / "examples"
SHIMS = ROOT / "tests" / "parl2" / "shims"
SIDES = ("parl221", "ours331", "ours262")

# per program: vendored folder, the argparse namespace of its __main__ block, module constants to set, the
# evaluation message and whether the first env made is the training env
PROGRAMS: dict[str, dict[str, Any]] = {
    "quickstart": {"dir": "QuickStart", "args": {"max_episodes": 1000}, "set": {}, "max_steps": 40000,
                   "eval": r"Test reward: ([-\d.]+)", "train_env_first": True},
    "dqn": {"dir": "DQN", "args": {"max_episode": 800}, "set": {}, "max_steps": 20000,
            "eval": r"Test reward:([-\d.]+)", "train_env_first": True},
    "ddpg": {"dir": "DDPG", "args": {"env": "Pendulum-v1", "train_total_steps": 1600, "test_every_steps": 800},
             "set": {"WARMUP_STEPS": 400}, "eval": r"Evaluation over: \d+ episodes, Reward: ([-\d.]+)",
             "train_env_first": False, "max_steps": None},
}


class _Stop(Exception):
    """Raised by the patched ``logger.info`` at the first evaluation that reaches the threshold."""


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one program once in this process (see the module docstring); returns the JSON-able result."""
    import numpy as np
    import paddle

    import parl
    from parl.utils import logger

    program = PROGRAMS[spec["program"]]
    work = Path(spec["work"])
    os.chdir(work)
    sys.path.insert(0, str(work))
    namespace: dict[str, Any] = {"__name__": "__bench_program__", "__file__": str(work / "train.py")}
    exec(compile((work / "train.py").read_text(encoding="utf-8"), namespace["__file__"], "exec"), namespace)
    namespace.update(program["set"])
    args = dict(program["args"])
    if spec["program"] == "ddpg":
        args["seed"] = spec["seed"]
    args.update(spec.get("args", {}))
    namespace["args"] = argparse.Namespace(**args)

    counts = {"train_steps": 0, "eval_steps": 0, "train_episodes": 0, "made": 0}
    first_step: list[float | None] = [None]  # perf_counter after the first env step returned
    last_step = [float("nan")]  # and after the last one
    gym = namespace["gym"]
    make = gym.make
    max_steps = spec.get("max_steps", program["max_steps"])

    def counted_make(*a: Any, **k: Any) -> Any:
        env = make(*a, **k)
        index = counts["made"]
        counts["made"] += 1
        env.seed(spec["seed"] * 1000 + index)
        training = index == 0 or not program["train_env_first"]
        step, reset = env.step, env.reset

        def step_(action: Any) -> Any:
            if training and counts["train_steps"] == max_steps:
                raise _Stop(f"budget of {max_steps} training env steps")
            counts["train_steps" if training else "eval_steps"] += 1
            result = step(action)
            last_step[0] = time.perf_counter()
            if first_step[0] is None:
                first_step[0] = last_step[0]
            return result

        def reset_(*ra: Any, **rk: Any) -> Any:
            if training:
                counts["train_episodes"] += 1
            return reset(*ra, **rk)

        env.step, env.reset = step_, reset_
        return env

    gym.make = counted_make
    evals: list[tuple[int, int, float]] = []  # (train steps, train episodes, reward) at each evaluation
    pattern = re.compile(program["eval"])
    threshold = spec.get("threshold")
    original_info = logger.info

    def info(msg: Any, *a: Any, **k: Any) -> None:
        text = str(msg) % a if a else str(msg)
        found = pattern.search(text)
        if found:
            evals.append((counts["train_steps"], counts["train_episodes"], float(found.group(1))))
            if threshold is not None and float(found.group(1)) >= threshold:
                raise _Stop(text)
        if spec.get("verbose"):
            original_info(msg, *a, **k)

    logger.info = info
    random.seed(spec["seed"])
    np.random.seed(spec["seed"])
    paddle.seed(spec["seed"])
    start = time.perf_counter()
    reached = False
    try:
        namespace["main"]()
    except _Stop as stop:
        reached = not str(stop).startswith("budget")
    end = time.perf_counter()
    logger.info = original_info
    gym.make = make
    # the program's loop: first env step to last (model building, replay allocation, final checkpoints excluded)
    wall = last_step[0] - first_step[0] if first_step[0] is not None else float("nan")
    steps = counts["train_steps"] + counts["eval_steps"]
    return {
        "program": spec["program"], "side": spec["side"], "seed": spec["seed"], "parl": parl.__file__,
        "parl_version": getattr(parl, "__version__", "?"), "paddle": paddle.__version__,
        "reached": reached, "threshold": threshold, "evals": evals, "wall_s": wall, "main_s": end - start,
        "ms_per_step": 1e3 * wall / steps if steps else float("nan"), **counts,
    }


def _acting(spec: dict[str, Any]) -> dict[str, Any]:
    """Time the vendored QuickStart / DQN agents' acting step in this process (see the module docstring)."""
    import importlib.util

    import numpy as np
    import paddle

    import parl

    def load(folder: str, name: str) -> Any:
        path = VENDORED / folder / f"{name}.py"
        module_spec = importlib.util.spec_from_file_location(f"{folder}_{name}", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        return module

    paddle.seed(0)
    np.random.seed(0)
    pg_agent, pg_model = load("QuickStart", "cartpole_agent"), load("QuickStart", "cartpole_model")
    dqn_agent, dqn_model = load("DQN", "cartpole_agent"), load("DQN", "cartpole_model")
    ours = hasattr(parl.Agent, "no_grad_methods")

    def variants(cls: type) -> dict[str, type]:
        found = {"as is": cls}
        if ours:
            found["with autograd"] = type(cls.__name__ + "WithGrad", (cls,), {"no_grad_methods": ()})
        return found

    cases = []
    for kind, cls in variants(pg_agent.CartpoleAgent).items():
        agent = cls(parl.algorithms.PolicyGradient(pg_model.CartpoleModel(obs_dim=4, act_dim=2), lr=1e-3))
        cases += [("QuickStart predict", kind, agent.predict), ("QuickStart sample", kind, agent.sample)]
    model = dqn_model.CartpoleModel(obs_dim=4, act_dim=2)
    for kind, cls in variants(dqn_agent.CartpoleAgent).items():
        agent = cls(parl.algorithms.DQN(model, gamma=0.99, lr=5e-4), act_dim=2, e_greed=0.1)
        cases += [("DQN predict", kind, agent.predict), ("DQN sample (e_greed 0.1)", kind, agent.sample)]
    obs = np.random.default_rng(0).normal(size=4).astype(np.float32)  # what CompatWrapper's CartPole returns
    for _, _, call in cases:
        for _ in range(200):
            call(obs)
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(spec["passes"]):
        for name, kind, call in cases:  # alternating: every variant of every case once per pass
            start = time.perf_counter()
            for _ in range(spec["calls"]):
                call(obs)
            samples.setdefault((name, kind), []).append(1e6 * (time.perf_counter() - start) / spec["calls"])
    return {"side": spec["side"], "parl": parl.__file__, "paddle": paddle.__version__,
            "us": [{"case": n, "kind": k, "min": min(v), "median": statistics.median(v)}
                   for (n, k), v in samples.items()]}


def _side_env(side: str, pycache_prefix: str | None = None) -> dict[str, str]:
    ours = [str(p) for p in sorted((ROOT / "packages").glob("*/src"))]
    path = [str(SHIMS)] + (ours if side != "parl221" else [str(ROOT / "packages" / "parl-core" / "src")])
    env = {**os.environ, "PARL_BACKEND": "paddle", "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(path)}
    if pycache_prefix:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache_prefix
    return env


def _side_python(side: str, parl_python: str | None) -> str:
    if side == "ours331":
        return sys.executable
    if not parl_python:
        raise SystemExit(f"side {side!r} runs on the PARL 2.2.1 venv's python: pass --parl-python PATH "
                         "(built from benchmarks/requirements-parl221.txt), or leave it out of --sides")
    return parl_python


def _run(side: str, parl_python: str | None, mode: str, spec: dict[str, Any], dry_run: bool,
         timeout: float, pycache_prefix: str | None = None) -> dict[str, Any] | None:
    cmd = [_side_python(side, parl_python), str(Path(__file__).resolve()), mode, json.dumps(spec)]
    if dry_run:
        print("would run:", " ".join(cmd[:3]), f"'{cmd[3]}'", f"(PARL_BACKEND=paddle, side {side})")
        return None
    out = subprocess.run(cmd, env=_side_env(side, pycache_prefix), capture_output=True, text=True, timeout=timeout)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{side} {mode} failed (exit {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _programs_table(results: list[dict[str, Any]], sides: list[str]) -> None:
    print("| program | side (paddle) | runs | reached threshold | train env steps to threshold, median (min-max) "
          "| episodes, median | wall s, median (min) | ms per env step, median (min) | PARL / ours, ms per step "
          "(medians) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for program in dict.fromkeys(r["program"] for r in results):
        rows = {s: [r for r in results if r["program"] == program and r["side"] == s] for s in sides}
        peer = _median([r["ms_per_step"] for r in rows.get("parl221", [])])
        for side in sides:
            runs = rows[side]
            if not runs:
                continue
            reached = [r for r in runs if r["reached"]]
            steps = [r["train_steps"] for r in reached] if runs[0]["threshold"] is not None else []
            eps = [r["train_episodes"] for r in reached] if steps else []
            walls = [r["wall_s"] for r in runs]
            ms = [r["ms_per_step"] for r in runs]
            ratio = peer / _median(ms) if side != "parl221" and peer == peer else float("nan")
            step_text = (f"{_median(steps):.0f} ({min(steps)}-{max(steps)})" if steps else
                         f"fixed budget: {_median([r['train_steps'] for r in runs]):.0f}")
            print(f"| {program} | {side} ({runs[0]['paddle']}) | {len(runs)} | "
                  f"{len(reached) if runs[0]['threshold'] is not None else '-'} / {len(runs)} | {step_text} | "
                  f"{_median(eps) if eps else '-'} | {_median(walls):.1f} ({min(walls):.1f}) | "
                  f"{_median(ms):.3f} ({min(ms):.3f}) | {'-' if ratio != ratio else f'{ratio:.2f}x'} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parl-python", help="python of the PARL 2.2.1 + paddle 2.6.2 venv")
    parser.add_argument("--sides", nargs="+", default=list(SIDES), choices=SIDES)
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--threshold", type=float, default=475.0,
                        help="evaluation reward that ends QuickStart / DQN (default 475: CartPole-v1's "
                             "reward_threshold, the env both evaluate on; the programs have none of their own)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per child run")
    parser.add_argument("--acting", action="store_true", help="time the vendored agents' acting step instead")
    parser.add_argument("--passes", type=int, default=15, help="--acting: passes (alternating)")
    parser.add_argument("--calls", type=int, default=300, help="--acting: calls per pass")
    parser.add_argument("--pycache-prefix", help="PYTHONPYCACHEPREFIX for the children (see the docstring)")
    parser.add_argument("--json", help="also write every run's result to this file")
    parser.add_argument("--dry-run", action="store_true", help="print the child commands only")
    parser.add_argument("--verbose", action="store_true", help="let the programs' logger print")
    opts = parser.parse_args(argv)
    if opts.seeds and min(opts.seeds) < 0:
        parser.error("--seeds must be >= 0")
    if opts.passes < 1 or opts.calls < 1:
        parser.error("--passes and --calls must be >= 1")
    for side in opts.sides:
        _side_python(side, opts.parl_python)  # fail before running anything
    results: list[dict[str, Any]] = []
    if opts.acting:
        for side in opts.sides:
            result = _run(side, opts.parl_python, "--acting-child",
                          {"side": side, "passes": opts.passes, "calls": opts.calls}, opts.dry_run, opts.timeout,
                          opts.pycache_prefix)
            if result:
                results.append(result)
                for row in result["us"]:
                    print(f"{side} ({result['paddle']}): {row['case']:<26} {row['kind']:<14} "
                          f"min {row['min']:7.1f} us  median {row['median']:7.1f} us", flush=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="bench_parl_programs_", dir=os.environ.get("BENCH_TMP")))
        try:
            for side in opts.sides if opts.pycache_prefix else ():  # untimed: fills the bytecode cache
                work = scratch / f"warmup_{side}"
                shutil.copytree(VENDORED / "QuickStart", work)
                spec = {"program": "quickstart", "side": side, "seed": 0, "work": str(work), "threshold": None,
                        "args": {"max_episodes": 3}}
                _run(side, opts.parl_python, "--child", spec, opts.dry_run, opts.timeout, opts.pycache_prefix)
            for i, seed in enumerate(opts.seeds):
                order = opts.sides if i % 2 == 0 else opts.sides[::-1]
                for program in opts.programs:
                    for side in order:
                        work = scratch / f"{program}_{side}_{seed}"
                        shutil.copytree(VENDORED / PROGRAMS[program]["dir"], work)
                        threshold = opts.threshold if program != "ddpg" else None
                        spec = {"program": program, "side": side, "seed": seed, "work": str(work),
                                "threshold": threshold, "verbose": opts.verbose}
                        result = _run(side, opts.parl_python, "--child", spec, opts.dry_run, opts.timeout,
                                      opts.pycache_prefix)
                        if result:
                            results.append(result)
                            print(f"{program} {side} ({result['paddle']}) seed {seed}: reached {result['reached']} "
                                  f"train steps {result['train_steps']} episodes {result['train_episodes']} "
                                  f"eval steps {result['eval_steps']} wall {result['wall_s']:.1f} s "
                                  f"{result['ms_per_step']:.3f} ms/step evals {result['evals']}", flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if results:
            _programs_table(results, opts.sides)
    if opts.json and results:
        Path(opts.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("--child", "--acting-child"):
        run = _child if sys.argv[1] == "--child" else _acting
        print(json.dumps(run(json.loads(sys.argv[2]))), flush=True)
    else:
        main()
