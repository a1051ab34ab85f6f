"""Ours vs Stable-Baselines3: SAC and TD3 on HalfCheetah-v5, final return after a fixed budget (100k env steps).

Both libraries get rl-baselines3-zoo's MuJoCo settings (identical in both; no early stop):

- SAC: Adam lr 3e-4 (actor, critics and temperature), two hidden layers of 256, automatic entropy tuning
  (target entropy -act_dim, initial alpha 1), log-std clamped to [-20, 2].
- TD3: Adam lr 1e-3, hidden layers [400, 300] (SB3's default TD3 net), Gaussian exploration noise std 0.1,
  target-policy noise 0.2 clipped at 0.5, one actor / target update every 2 critic updates.
- Both: batch 256, replay buffer 1e6, 10,000 uniform-random steps first, tau 0.005, gamma 0.99, one gradient
  step per env step, ``torch.set_num_threads(1)``; truncation is not stored as termination.

Evaluation (the same function in both): 10 deterministic episodes in parallel on a vector env seeded
``seed + 10000``, at ``--eval-every`` steps and at the end; the summary reports the final one.

Each run is a subprocess (``examples/<algo>/train.py`` with the flags below, or ``sb3_runner.py <algo> --env``)
started under ``nice -n 10`` (``--nice``) so that other work on a shared machine stays responsive. With
``--jobs 2`` two runs go at once from the queue ``(seed, algo, ours / SB3)``, so ours and SB3 of the same
seed and algorithm run side by side under the same load. The 1-minute load average is recorded before and
after each run, and each run reports its own CPU seconds (``time.process_time()``; wall clock on a shared VM
also counts the time a run waited for a core). ``--out`` appends one JSON line per finished run (partial
results survive an interruption); ``--summarize FILE`` prints the tables from such a file without running.

Needs ``pip install -c constraints.txt -r benchmarks/requirements.txt`` (stable-baselines3, gymnasium[mujoco]).

Usage::

    python benchmarks/algorithms/bench_halfcheetah.py --seeds 0 1 2 --jobs 2 --out halfcheetah.jsonl
    python benchmarks/algorithms/bench_halfcheetah.py sac --seeds 0 --total-steps 3000 --learning-starts 1000
    python benchmarks/algorithms/bench_halfcheetah.py --summarize halfcheetah.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from bench_vs_sb3 import mean_diff_ci, ratio_of_means_ci  # noqa: E402 (a sibling script)

# our examples' flags for the settings sb3_runner.py gives SB3 in its MuJoCo mode
OURS_FLAGS = {
    "sac": ["--hidden-sizes", "256", "256", "--actor-lr", "3e-4", "--critic-lr", "3e-4", "--gamma", "0.99",
            "--batch-size", "256", "--buffer-size", "1000000"],
    "td3": ["--hidden-sizes", "400", "300", "--actor-lr", "1e-3", "--critic-lr", "1e-3", "--gamma", "0.99",
            "--batch-size", "256", "--buffer-size", "1000000", "--expl-noise", "0.1"],
}


def loadavg() -> float:
    """The 1-minute load average (``/proc/loadavg``)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def command(lib: str, algo: str, seed: int, args: argparse.Namespace, logdir: str) -> list[str]:
    """The subprocess command line of one run."""
    budget = ["--total-steps", str(args.total_steps), "--learning-starts", str(args.learning_starts),
              "--eval-every", str(args.eval_every), "--seed", str(seed), "--logdir", logdir]
    if lib == "ours":
        return [sys.executable, str(ROOT / "examples" / algo / "train.py"), "--env", args.env, *budget,
                "--target-return", "1e9", "--no-progress", *OURS_FLAGS[algo]]
    return [sys.executable, str(HERE / "sb3_runner.py"), algo, "--env", args.env, *budget]


def run(lib: str, algo: str, seed: int, args: argparse.Namespace, runs_dir: str) -> dict:
    """One run as a niced subprocess; returns its summary.json plus timing and load fields."""
    logdir = os.path.join(runs_dir, f"{lib}-{algo}-{seed}")
    niceness = args.nice
    load, t0 = loadavg(), time.time()
    proc = subprocess.run(command(lib, algo, seed, args, logdir), capture_output=True, text=True, cwd=str(ROOT),
                          preexec_fn=lambda: os.nice(niceness))
    if proc.returncode != 0:
        raise RuntimeError(f"{lib} {algo} seed {seed} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    with open(os.path.join(logdir, "summary.json")) as f:
        result = json.load(f)
    evals = dict((int(s), r) for s, r in result.get("evals", []))
    result.update(lib=lib, algo=algo, loadavg_before=load, loadavg_after=loadavg(), jobs=args.jobs,
                  nice=niceness, eval_mid=evals.get(args.eval_every), eval_mid_step=args.eval_every,
                  steps_per_s=result["env_steps"] / result["wall_s"],
                  started_utc=time.strftime("%H:%M:%S", time.gmtime(t0)),
                  ended_utc=time.strftime("%H:%M:%S", time.gmtime()))
    return result


def mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):,.0f} ± {std:,.0f}"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def num(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None or value != value else format(value, fmt)


def print_tables(rows: list[dict]) -> None:
    """Per-run rows, then a summary per algorithm (ours vs SB3)."""
    rows = sorted(rows, key=lambda r: (r["algo"], r["seed"], r["lib"]))
    print("\n| algo | seed | lib | final eval (10 ep.) | eval at mid | env steps | wall s | env-steps/s | CPU s | "
          "env-steps per CPU s | loadavg before / after | started UTC |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        mid = "-" if r.get("eval_mid") is None else f"{r['eval_mid']:,.0f} ({r['eval_mid_step'] // 1000}k)"
        print(f"| {r['algo']} | {r['seed']} | {r['lib']} | {r['eval_return_mean']:,.0f} | {mid} | {r['env_steps']} | "
              f"{r['wall_s']:.0f} | {r['steps_per_s']:.0f} | {num(r.get('cpu_s'))} | "
              f"{num(r['env_steps'] / r['cpu_s'] if 'cpu_s' in r else None)} | {r['loadavg_before']:.1f} / "
              f"{r['loadavg_after']:.1f} | {r.get('started_utc', '-')} |")
    print("\n| algo | seeds ours / SB3 | final eval mean ± std, ours | SB3 | median final eval ours / SB3 | "
          "median env-steps/s ours / SB3 (ratio) | median env-steps per CPU s ours / SB3 (ratio) |")
    print("|---|---|---|---|---|---|---|")
    for algo in sorted({r["algo"] for r in rows}):
        by = {lib: [r for r in rows if r["algo"] == algo and r["lib"] == lib] for lib in ("ours", "sb3")}
        final = {lib: [r["eval_return_mean"] for r in by[lib]] for lib in by}
        rate = {lib: median([r["steps_per_s"] for r in by[lib]]) for lib in by}
        cpu = {lib: median([r["env_steps"] / r["cpu_s"] for r in by[lib] if "cpu_s" in r]) for lib in by}
        print(f"| {algo} | {len(by['ours'])} / {len(by['sb3'])} | {mean_std(final['ours'])} | {mean_std(final['sb3'])} "
              f"| {median(final['ours']):,.0f} / {median(final['sb3']):,.0f} | "
              f"{rate['ours']:.0f} / {rate['sb3']:.0f} ({rate['ours'] / rate['sb3']:.2f}x) | "
              f"{num(cpu['ours'])} / {num(cpu['sb3'])} ({num(cpu['ours'] / cpu['sb3'], '.2f')}x) |")
    print("\nFinal eval over the seeds run by both, ours vs SB3 of the same seed (95 % intervals resample the seeds"
          " in pairs; an interval containing 1.0 / 0 means no difference is shown):")
    print("| algo | seeds | ours better on | mean ours / mean SB3 [95 % CI] | mean of (ours - SB3) [95 % CI] |")
    print("|---|---|---|---|---|")
    for algo in sorted({r["algo"] for r in rows}):
        final = {(r["lib"], r["seed"]): r["eval_return_mean"] for r in rows if r["algo"] == algo}
        seeds = sorted(s for (lib, s) in final if lib == "ours" and ("sb3", s) in final)
        ours, sb3 = [final["ours", s] for s in seeds], [final["sb3", s] for s in seeds]
        ratio, low, high = ratio_of_means_ci(ours, sb3)
        diff, dlow, dhigh = mean_diff_ci(ours, sb3)
        better = sum(o > b for o, b in zip(ours, sb3, strict=True))
        print(f"| {algo} | {', '.join(map(str, seeds))} | {better} of {len(seeds)} | "
              f"{ratio:.2f} [{low:.2f}, {high:.2f}] | {diff:+,.0f} [{dlow:+,.0f}, {dhigh:+,.0f}] |")



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("algos", nargs="*", help="sac and / or td3 (default: both)")
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--learning-starts", type=int, default=10_000)
    parser.add_argument("--eval-every", type=int, default=50_000)
    parser.add_argument("--jobs", type=int, default=1, choices=[1, 2], help="runs at once (2: ours and SB3 together)")
    parser.add_argument("--nice", type=int, default=10, help="niceness added to each run (os.nice)")
    parser.add_argument("--out", default=None, help="append one JSON line per finished run to this file")
    parser.add_argument("--runs-dir", default=None, help="keep the runs' logdirs here (default: a temporary dir)")
    parser.add_argument("--start-before", default=None, metavar="HH:MM",
                        help="UTC time after which no further run starts (skipped runs are listed at the end)")
    parser.add_argument("--summarize", default=None, metavar="JSONL", help="only print the tables of this file")
    args = parser.parse_args()
    if args.summarize:
        with open(args.summarize) as f:
            print_tables([json.loads(line) for line in f if line.strip()])
        return
    algos = args.algos or ["sac", "td3"]
    unknown = [a for a in algos if a not in OURS_FLAGS]
    if unknown:
        parser.error(f"unknown algorithm(s) {unknown}; choose from {list(OURS_FLAGS)}")
    if args.eval_every <= 0 or args.total_steps <= args.learning_starts:
        parser.error("need --eval-every > 0 and --total-steps > --learning-starts")
    tasks = [(lib, algo, seed) for i, seed in enumerate(args.seeds) for algo in algos
             for lib in (("ours", "sb3") if i % 2 == 0 else ("sb3", "ours"))]
    rows: list[dict] = []
    lock = threading.Lock()

    skipped: list[tuple[str, str, int]] = []

    def one(task: tuple[str, str, int], runs_dir: str) -> None:
        if args.start_before and time.strftime("%H:%M", time.gmtime()) >= args.start_before:
            skipped.append(task)
            return
        result = run(*task, args, runs_dir)
        with lock:
            rows.append(result)
            print(json.dumps(result), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(result) + "\n")

    with tempfile.TemporaryDirectory() as tmp:
        runs_dir = args.runs_dir or tmp
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(one, task, runs_dir) for task in tasks]
            for future in futures:
                future.result()
    print_tables(rows)
    if skipped:
        print(f"\nnot run (--start-before {args.start_before} UTC passed): {skipped}")


if __name__ == "__main__":
    main()
