"""Ours vs EPyMARL (and BenchMARL's MAPPO): MADDPG, QMIX, MAPPO and COMA on the same tasks, budgets and seeds.

Rows (the task conventions of issue 23; the reward unit is printed in every table):

============  ====================================================  ==========================================
row           task                                                  return reported (unit)
============  ====================================================  ==========================================
``maddpg``    mpe2 ``simple_spread_v3``, N=3, local_ratio=0,        episode return summed over the 3 agents
              max_cycles=25, discrete actions                       (PARL's MADDPG metric; random -158.6)
``mappo``     the same spread task                                  per-agent episode return (sum / 3, PARL's
                                                                    MAPPO metric; random -52.9)
``qmix``      lbforaging ``Foraging-8x8-2p-2f-coop-v3``, 50 steps   team return, summed over the 2 agents
``coma``      the same LBF task                                     team return, summed over the 2 agents
============  ====================================================  ==========================================

For every row and seed it runs our example (``examples/<algo>/train.py --env/--scenario --seed --total-steps
--logdir --eval-every --eval-episodes``, reading ``<logdir>/summary.json`` and ``<logdir>/curve.csv``) and the
peer: EPyMARL from a checkout given with ``--epymarl`` (run by ``epymarl_run.py`` in EPyMARL's own venv,
``--epymarl-python``; its sacred ``metrics.json`` / ``run.json`` are read) and, for ``mappo``, BenchMARL's MAPPO
(``benchmarl_run.py`` in BenchMARL's venv, ``--benchmarl-python``). Ours and the peer alternate which goes first
from one seed to the next; with ``--jobs 2`` the runs of one seed go side by side (same load). The 1-minute
load average is recorded before and after each run.

Same protocol on both sides: the env-step budget counts joint env steps over all parallel envs (EPyMARL HEAD's
``t_env`` counts every parallel env's steps; its MAPPO / COMA run 10 envs), EPyMARL's default hyperparameters
(``src/config/algs/<alg>.yaml``, parameter sharing), greedy evaluation on 100 episodes (EPyMARL's gymma default)
every budget / 20 env steps and at the start. Figures per run:

- final return: the last evaluation (at the budget); best return: the largest evaluation (EPyMARL's "maximum
  returns"); mean over evaluations (EPyMARL's "average returns");
- env steps/s including training (and evaluation): env steps / wall seconds of the run (EPyMARL: sacred's
  start to stop; ours: ``summary.json`` ``wall_s``);
- time to a fixed return: the wall seconds at the first evaluation at or above the row's threshold, fixed per
  task (``--threshold ROW=VALUE`` to change): MADDPG spread -110 summed
  (random -158.6), MAPPO spread -44.5 per agent (random -52.9 plus half the gap to EPyMARL's MAPPO seed 0 final
  -36.2), LBF 0.1 team return (20x random) for QMIX and COMA (EPyMARL's QMIX and COMA stayed near random at
  500k here, so "half the gap to the peer's final" would be noise).

Per row it prints mean and 95 % interval over seeds (Student t) of each figure, ours - peer returns (paired
bootstrap interval) and the ratios ours / peer for speed (steps/s) and peer / ours for time to the return.

Modes: ``--quick`` (one seed, tiny budgets: a smoke check that every side runs and parses); ``--only
ours|peer|benchmarl`` (run one side); ``--parse`` (run nothing: tabulate existing logs, e.g. the long peer runs,
from ``--epymarl-results DIR``, ``--benchmarl-results DIR`` and ``--ours-results ROW=DIR`` trees).

Usage::

    python benchmarks/marl/bench_marl.py qmix --seeds 0 1 2 3 4 --epymarl /path/to/epymarl \\
        --epymarl-python /path/to/epymarl-venv/bin/python --workdir runs/marl --out marl.jsonl
    python benchmarks/marl/bench_marl.py --quick --epymarl ... --epymarl-python ... --benchmarl-python ...
    python benchmarks/marl/bench_marl.py --parse --epymarl-results runs/marl/epymarl \\
        --ours-results qmix=/path/to/our/qmix/runs
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "algorithms"))
from bench_vs_sb3 import mean_diff_ci, ratio_of_means_ci  # noqa: E402 (a sibling folder's script)

SPREAD = {"id": "mpe2:simple_spread_v3", "N": 3, "local_ratio": 0.0, "max_cycles": 25}
LBF_ID = "Foraging-8x8-2p-2f-coop-v3"
EPYMARL_ENV = {
    "spread": ["env_args.time_limit=25", "env_args.key=pz-mpe-simple-spread-v3", "env_args.N=3",
               "env_args.local_ratio=0.0", "env_args.max_cycles=25"],
    "lbf": ["env_args.time_limit=50", f"env_args.key=lbforaging:{LBF_ID}"],
}
EPISODE_LIMIT = {"spread": 25, "lbf": 50}
# scale: EPyMARL's common reward is the sum over agents; the row's unit is that sum times `scale`
ROWS = {
    "maddpg": {"threshold": -110.0, "task": "spread", "budget": 625_000, "scale": 1.0, "random": -158.6, "envs": 1,
               "unit": "episode return summed over the 3 agents (mpe2 spread, N=3, local_ratio=0, 25 steps)",
               "ours": ["examples/maddpg/train.py", "--scenario", "simple_spread"]},
    "qmix": {"threshold": 0.1, "task": "lbf", "budget": 500_000, "scale": 1.0, "random": 0.005, "envs": 1,
             "unit": f"team return summed over the 2 agents (lbforaging {LBF_ID}, 50 steps)",
             "ours": ["examples/qmix/train.py", "--env", LBF_ID]},
    "coma": {"threshold": 0.1, "task": "lbf", "budget": 500_000, "scale": 1.0, "random": 0.005, "envs": 10,
             "unit": f"team return summed over the 2 agents (lbforaging {LBF_ID}, 50 steps)",
             "ours": ["examples/coma/train.py", "--env", LBF_ID]},
    "mappo": {"threshold": -44.5, "task": "spread", "budget": 500_000, "scale": 1.0 / 3.0, "random": -52.9, "envs": 10,
              "unit": "per-agent episode return (sum over the 3 agents / 3; mpe2 spread, N=3, local_ratio=0, "
                      "25 steps)",
              "ours": ["examples/mappo/train.py", "--env", SPREAD["id"]]},
}
QUICK_BUDGET = {"maddpg": 3_000, "qmix": 4_000, "coma": 5_000, "mappo": 5_000}
EVAL_POINTS = 20
EVAL_EPISODES = 100


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def eval_interval(row: str, budget: int) -> int:
    """EPyMARL tests after the first batch of episodes and then when ``t_env - last_test >= test_interval``,
    ``t_env`` growing by whole episodes of all its parallel envs, and trains while ``t_env <= t_max``. Spread's
    episodes all last 25 steps: with the interval budget / 20 the 20th test comes one batch past the budget (the
    batch that starts at the budget). LBF's episodes end early when the food is gone, so each interval can
    overshoot by up to one batch: the interval is shortened by one batch, and the 20th test falls within 20
    batches before the budget (QMIX: 1,000 steps; COMA, 10 envs: 10,000)."""
    spec = ROWS[row]
    if spec["task"] == "spread":
        return budget // EVAL_POINTS
    return max(1, budget // EVAL_POINTS - EPISODE_LIMIT[spec["task"]] * spec["envs"])


# ----------------------------------------------------------------------------------------------- running ---
def epymarl_cmd(args, row: str, seed: int, budget: int, results: str, eval_episodes: int) -> list[str]:
    spec, interval = ROWS[row], eval_interval(row, budget)
    return [args.epymarl_python, str(HERE / "epymarl_run.py"), "--epymarl", args.epymarl, "--results", results, "--",
            f"--config={row}", "--env-config=gymma", "--force", "with", *EPYMARL_ENV[spec["task"]],
            f"t_max={budget}", f"test_interval={interval}", f"test_nepisode={eval_episodes}",
            f"log_interval={interval}", f"runner_log_interval={interval}", f"learner_log_interval={interval}",
            f"seed={seed}", "use_cuda=False", "save_model=False"]


def _per_row(specs: list[str], flag: str) -> dict[str, str]:
    out = {}
    for spec in specs:
        row, sep, value = spec.partition("=")
        if row not in ROWS or not sep:
            raise SystemExit(f"{flag} {spec!r}: expected ROW=VALUE with ROW one of {list(ROWS)}")
        out[row] = value
    return out


def ours_root(args, row: str) -> Path:
    """The checkout whose ``examples/<algo>/train.py`` and ``packages/*/src`` run for this row."""
    return Path(_per_row(args.ours_root, "--ours-root").get(row, ROOT)).resolve()


def ours_cmd(args, row: str, seed: int, budget: int, logdir: str, eval_episodes: int) -> list[str]:
    extra = shlex.split(_per_row(args.ours_args, "--ours-args").get(row, ""))
    return [args.ours_python, str(ours_root(args, row) / ROWS[row]["ours"][0]), *ROWS[row]["ours"][1:], "--seed",
            str(seed), "--total-steps", str(budget), "--logdir", logdir, "--eval-every", str(budget // EVAL_POINTS),
            "--eval-episodes", str(eval_episodes), "--no-progress", *extra]


def benchmarl_cmd(args, row: str, seed: int, budget: int, logdir: str, eval_episodes: int) -> list[str]:
    return [args.benchmarl_python, str(HERE / "benchmarl_run.py"), "--algorithm", row, "--seed", str(seed),
            "--total-steps", str(budget), "--logdir", logdir, "--eval-every", str(budget // EVAL_POINTS),
            "--eval-episodes", str(eval_episodes)]


def run_one(args, lib: str, row: str, seed: int, budget: int) -> dict:
    eval_episodes = 5 if args.quick else EVAL_EPISODES
    workdir = os.path.abspath(args.workdir)
    if lib == "epymarl":
        results = os.path.join(workdir, "epymarl")
        before = set(_sacred_runs(results))
        cmd = epymarl_cmd(args, row, seed, budget, results, eval_episodes)
    else:
        logdir = os.path.join(workdir, lib, f"{row}-seed{seed}-{budget}")
        cmd = (ours_cmd if lib == "ours" else benchmarl_cmd)(args, row, seed, budget, logdir, eval_episodes)
    log = os.path.join(workdir, "logs", f"{lib}-{row}-seed{seed}-{budget}.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    load_before, start = loadavg(), time.time()
    env, cwd = dict(os.environ), ROOT
    if lib == "ours":  # that checkout's packages first (its packages/*/src on PYTHONPATH)
        cwd = ours_root(args, row)
        src = [str(p) for p in sorted((cwd / "packages").glob("*/src"))]
        env["PYTHONPATH"] = os.pathsep.join(src + [p for p in [env.get("PYTHONPATH")] if p])
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(["nice", "-n", str(args.nice), *cmd], stdout=f, stderr=subprocess.STDOUT,
                                cwd=str(cwd), env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # CPU seconds of the run and of its children (EPyMARL's envs)
    process_wall = time.time() - start
    returncode = os.waitstatus_to_exitcode(status)
    if returncode != 0:
        raise RuntimeError(f"{lib} {row} seed {seed} failed (exit {returncode}); see {log}")
    if lib == "epymarl":
        new = [d for d in _sacred_runs(results) if d not in before]
        if len(new) != 1:
            raise RuntimeError(f"expected one new sacred run under {results}, found {new}")
        result = parse_epymarl(new[0])
    else:
        result = parse_ours(logdir, row, lib)
    result.update(load_before=load_before, load_after=loadavg(), process_wall_s=process_wall,
                  cpu_s=usage.ru_utime + usage.ru_stime, log=log)
    return result


# ----------------------------------------------------------------------------------------------- parsing ---
def _sacred_runs(results: str) -> list[str]:
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(results, "sacred", "*", "*", "*", "run.json")))


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def parse_epymarl(run_dir: str) -> dict:
    """One EPyMARL sacred run -> the row's figures (returns converted to the row's unit)."""
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(run_dir, "metrics.json")) as f:
        metrics = json.load(f)
    row = config["name"]
    if row not in ROWS:
        raise ValueError(f"{run_dir}: EPyMARL algorithm {row!r} is not a row of this benchmark ({list(ROWS)})")
    test = metrics.get("test_return_mean", {"steps": [], "values": [], "timestamps": []})
    start = _ts(run["start_time"])
    stop = _ts(run.get("stop_time") or run["heartbeat"])
    episodes = metrics.get("episode", {}).get("values", [])
    scale = ROWS[row]["scale"]
    steps = test["steps"]
    t_env = max((s for m in metrics.values() for s in m.get("steps", [])), default=0)  # the last logged t_env
    if run.get("status") == "COMPLETED":  # it trains on until t_env > t_max (logs are sparser)
        t_env = max(t_env, config["t_max"])
    return {
        "lib": "epymarl", "row": row, "seed": config["seed"], "budget": config["t_max"], "status": run.get("status"),
        "env_key": config["env_args"]["key"], "env_args": config["env_args"], "curve_steps": steps,
        "curve_wall_s": [_ts(t) - start for t in test["timestamps"]], "start_t": start,
        "curve_t": [_ts(t) for t in test["timestamps"]],
        "curve_return": [v * scale for v in test["values"]],
        "env_steps": t_env, "wall_s": stop - start,
        "episodes": episodes[-1] if episodes else None, "run_dir": run_dir,
    }


def parse_ours(logdir: str, row: str, lib: str = "ours") -> dict:
    """One run of ours (or of benchmarl_run.py): ``summary.json`` and ``curve.csv``."""
    with open(os.path.join(logdir, "summary.json")) as f:
        summary = json.load(f)
    curve_steps, curve_wall, curve_return = [], [], []
    curve = os.path.join(logdir, "curve.csv")
    if os.path.exists(curve):
        with open(curve) as f:
            for rec in csv.DictReader(f):
                if rec.get("eval_return_mean") not in (None, "", "nan"):
                    curve_steps.append(int(float(rec["env_steps"])))
                    curve_wall.append(float(rec["wall_s"]))
                    curve_return.append(float(rec["eval_return_mean"]))
    if not curve_return or curve_steps[-1] != summary["env_steps"]:
        curve_steps.append(summary["env_steps"])
        curve_wall.append(summary["wall_s"])
        curve_return.append(summary["eval_return_mean"])
    end_t = os.path.getmtime(os.path.join(logdir, "summary.json"))  # written at wall_s
    seed = summary.get("seed")
    if seed is None:
        match = re.search(r"seed[_-]?(\d+)", logdir)
        seed = int(match.group(1)) if match else None
    return {"lib": lib, "row": row, "seed": seed, "budget": summary.get("total_steps", summary["env_steps"]),
            "status": "COMPLETED", "env_id": summary.get("env_id"), "env_version": summary.get("env_version"),
            "reward_unit": summary.get("reward_unit"), "curve_steps": curve_steps, "curve_wall_s": curve_wall,
            "curve_return": curve_return, "env_steps": summary["env_steps"], "wall_s": summary["wall_s"],
            "run_dir": logdir, "start_t": end_t - summary["wall_s"],
            "curve_t": [end_t - summary["wall_s"] + w for w in curve_wall]}


def attach_cpu_trace(results: list[dict], trace_file: str) -> None:
    """Adds ``curve_cpu_s`` (CPU seconds of the run's process tree at each evaluation, interpolated in the
    ``cpu_trace.py`` samples) and ``cpu_s`` (when the run did not record its own) to each run found there."""
    series: dict[tuple[int, float], list[tuple[float, float]]] = {}
    cmds: dict[tuple[int, float], str] = {}
    with open(trace_file) as f:
        for line in f:
            rec = json.loads(line)
            # the start time is computed from /proc/uptime at each sample: equal within a second for one process
            key = next((k for k in cmds if k[0] == rec["pid"] and abs(k[1] - rec["start"]) < 5),
                       (rec["pid"], rec["start"]))
            series.setdefault(key, []).append((rec["t"], rec["cpu_s"]))
            cmds[key] = rec["cmd"]
    for r in results:
        if r["lib"] == "epymarl":
            root = r["run_dir"].split(os.sep + "sacred" + os.sep)[0]
            marks = ["epymarl_run.py", f"--config={r['row']} ", f"seed={r['seed']} ", root]
        else:
            marks = [r["run_dir"].rstrip(os.sep) + " "]
        found = [k for k, c in cmds.items() if all(m in c + " " for m in marks)]
        if not found:
            continue
        key = min(found, key=lambda k: abs(k[1] - r["start_t"]))
        points = [(float(key[1]), 0.0)] + sorted(series[key])
        times, cpus = [t for t, _ in points], [c for _, c in points]

        def cpu_at(t: float, times=times, cpus=cpus) -> float | None:
            if t > times[-1] + 60:  # the run outlived the trace
                return None
            i = next((j for j, x in enumerate(times) if x >= t), len(times) - 1)
            if i == 0 or times[i] <= t:
                return cpus[i]
            w = (t - times[i - 1]) / (times[i] - times[i - 1])
            return cpus[i - 1] + w * (cpus[i] - cpus[i - 1])

        r["curve_cpu_s"] = [cpu_at(t) for t in r["curve_t"]]
        if not r.get("cpu_s"):
            r["cpu_s"] = cpus[-1]
            r["cpu_s_from_trace"] = True


TASK_MARK = {"spread": "simple_spread", "lbf": LBF_ID}


def on_task(r: dict) -> bool:
    """Whether a parsed run played its row's task (a logdir tree may hold runs on other envs)."""
    env = (r.get("env_key") or r.get("env_id") or "").replace("_", "-")
    task = ROWS[r["row"]]["task"]
    if TASK_MARK[task].replace("_", "-") not in env:
        return False
    kwargs = r.get("env_args")  # EPyMARL: spread needs PARL's settings, not mpe2's defaults
    return task != "spread" or kwargs is None or all(
        kwargs.get(k) == SPREAD[k] for k in ("N", "local_ratio", "max_cycles"))


def collect(args) -> list[dict]:
    """Existing logs: EPyMARL sacred runs, BenchMARL runs and ours (``ROW=DIR``: every summary.json below);
    runs on another env than their row's task are left out (with a note on stderr)."""
    rows: list[dict] = []
    for path in args.results_jsonl:  # lines written by --out: the run's logs parsed again, plus load averages
        with open(path) as f:  # and wait4 CPU seconds from the line
            for line in filter(str.strip, f):
                rec = json.loads(line)
                if rec["lib"] == "epymarl":
                    run = parse_epymarl(rec["run_dir"])
                else:
                    run = parse_ours(rec["run_dir"], rec["row"], rec["lib"])
                run.update({k: rec[k] for k in ("load_before", "load_after", "process_wall_s", "cpu_s", "log")
                            if k in rec})
                rows.append(run)
    known = {r["run_dir"] for r in rows}
    for results in args.epymarl_results:
        for run_dir in _sacred_runs(results):
            if run_dir in known:
                continue
            try:
                rows.append(parse_epymarl(run_dir))
            except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
                print(f"skipped {run_dir}: {exc}", file=sys.stderr)
    for lib, specs in (("ours", args.ours_results), ("benchmarl", args.benchmarl_results)):
        for spec in specs:
            row, _, root = spec.partition("=")
            if row not in ROWS or not root:
                raise SystemExit(f"--{lib}-results {spec!r}: expected ROW=DIR with ROW one of {list(ROWS)}")
            for top in sorted(glob.glob(root)):
                for summary in sorted(glob.glob(os.path.join(top, "**", "summary.json"), recursive=True)):
                    if os.path.dirname(summary) not in known:
                        rows.append(parse_ours(os.path.dirname(summary), row, lib))
    for r in rows:
        if not on_task(r):
            print(f"left out {r['run_dir']}: env {r.get('env_key') or r.get('env_id')!r} is not the {r['row']} task",
                  file=sys.stderr)
    return [r for r in rows if on_task(r)]


# ------------------------------------------------------------------------------------------------ tables ---
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of its 95 % Student-t interval (nan for fewer than 2 values)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return float("nan"), float("nan")
    if len(values) < 2:
        return values[0], float("nan")
    t = _T975.get(len(values) - 1, 1.96)
    return statistics.mean(values), t * statistics.stdev(values) / math.sqrt(len(values))


def fmt(values: list[float], digits: int = 2) -> str:
    m, h = mean_ci(values)
    return f"{m:.{digits}f}" if math.isnan(h) else f"{m:.{digits}f} ± {h:.{digits}f}"


def figures(r: dict, threshold: float | None) -> dict:
    ret = r["curve_return"]
    first = None
    if threshold is not None:
        first = next((i for i, v in enumerate(ret) if v >= threshold), None)
    return {"final": ret[-1] if ret else float("nan"), "best": max(ret) if ret else float("nan"),
            "average": statistics.mean(ret) if ret else float("nan"),
            "steps_per_s": r["env_steps"] / r["wall_s"] if r["wall_s"] else float("nan"),
            "steps_per_cpu_s": r["env_steps"] / r["cpu_s"] if r.get("cpu_s") else None,
            "to_threshold_s": None if first is None else r["curve_wall_s"][first],
            "to_threshold_cpu_s": None if first is None or "curve_cpu_s" not in r else r["curve_cpu_s"][first],
            "to_threshold_steps": None if first is None else r["curve_steps"][first]}


def report(results: list[dict], thresholds: dict[str, float]) -> None:
    print(f"\nload average now: {loadavg()}")
    libs_order = ["ours", "epymarl", "benchmarl"]
    print("\n| row | lib | seed | status | budget | env steps | wall s | steps/s | CPU s | steps per CPU s | final "
          "| best | evals | load before / after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(results, key=lambda r: (r["row"], libs_order.index(r["lib"]), r["seed"] or 0)):
        f = figures(r, None)
        cpu = r.get("cpu_s")
        cpu_cols = f"{cpu:.0f} | {r['env_steps'] / cpu:.0f}" if cpu else "- | -"
        print(f"| {r['row']} | {r['lib']} | {r['seed']} | {r['status']} | {r['budget']} | {r['env_steps']} | "
              f"{r['wall_s']:.0f} | "
              f"{f['steps_per_s']:.0f} | {cpu_cols} | "
              f"{f['final']:.3f} | {f['best']:.3f} | {len(r['curve_return'])} | "
              f"{r.get('load_before', '-')} / {r.get('load_after', '-')} |")
    def budget_class(r: dict) -> int:  # nominal budget (ours may end a batch past it)
        return round(r["budget"] / 5000) * 5000

    done = [r for r in results if r["status"] == "COMPLETED"]  # unfinished runs: first table only
    keys = {(r["row"], budget_class(r)) for r in done}
    for row, budget in sorted(keys, key=lambda k: (list(ROWS).index(k[0]), -k[1])):
        by = {lib: sorted([r for r in done if r["row"] == row and r["lib"] == lib and budget_class(r) == budget],
                          key=lambda r: r["seed"]) for lib in libs_order}
        spec = ROWS[row]
        threshold = thresholds.get(row, spec["threshold"])
        print(f"\n### {row}, {budget:,} env steps: {spec['unit']}")
        shown = f"{threshold:.3f}"
        print(f"Budgets {sorted({r['budget'] for lib in by.values() for r in lib})} env steps (joint steps over all "
              f"parallel envs); random policy {spec['random']}; threshold {shown}.")
        print("\n| lib | seeds | final return | best return | average over evaluations | env steps/s incl. training "
              "| env steps per CPU s | time to threshold s (reached) | CPU s to threshold (reached) |")
        print("|---|---|---|---|---|---|---|---|---|")
        figs = {lib: {r["seed"]: figures(r, threshold) for r in runs} for lib, runs in by.items()}
        for lib in libs_order:
            if not by[lib]:
                continue
            fl = list(figs[lib].values())
            reached = [f["to_threshold_s"] for f in fl if f["to_threshold_s"] is not None]
            reached_cpu = [f["to_threshold_cpu_s"] for f in fl if f["to_threshold_cpu_s"] is not None]
            per_cpu = [f["steps_per_cpu_s"] for f in fl if f["steps_per_cpu_s"] is not None]
            print(f"| {lib} | {len(fl)} | {fmt([f['final'] for f in fl], 3)} | {fmt([f['best'] for f in fl], 3)} | "
                  f"{fmt([f['average'] for f in fl], 3)} | {fmt([f['steps_per_s'] for f in fl], 0)} | "
                  f"{fmt(per_cpu, 0) if per_cpu else '-'} ({len(per_cpu)}/{len(fl)}) | "
                  f"{fmt(reached, 0) if reached else '-'} ({len(reached)}/{len(fl)}) | "
                  f"{fmt(reached_cpu, 0) if reached_cpu else '-'} ({len(reached_cpu)}/{len(fl)}) |")
        for peer in ("epymarl", "benchmarl"):
            seeds = sorted(set(figs["ours"]) & set(figs[peer]))
            if not seeds:
                continue
            o, p = [figs["ours"][s] for s in seeds], [figs[peer][s] for s in seeds]
            fd, fl_, fh = mean_diff_ci([x["final"] for x in o], [x["final"] for x in p])
            bd, bl, bh = mean_diff_ci([x["best"] for x in o], [x["best"] for x in p])
            sr, sl, sh = ratio_of_means_ci([x["steps_per_s"] for x in o], [x["steps_per_s"] for x in p])
            pairs = list(zip(o, p, strict=True))
            both = [(x, y) for x, y in pairs if x["to_threshold_s"] is not None and y["to_threshold_s"] is not None]
            line = (f"ours vs {peer}, seeds {seeds}: final ours - {peer} {fd:+.3f} [{fl_:+.3f}, {fh:+.3f}]; best "
                    f"{bd:+.3f} [{bl:+.3f}, {bh:+.3f}]; steps/s ours / {peer} {sr:.2f}x [{sl:.2f}, {sh:.2f}]")
            if both:
                tr, tl, th = ratio_of_means_ci([y["to_threshold_s"] for _, y in both],
                                               [x["to_threshold_s"] for x, _ in both])
                line += f"; time to threshold {peer} / ours {tr:.2f}x [{tl:.2f}, {th:.2f}] over {len(both)} seeds"
            cpu_pairs = [(x, y) for x, y in pairs if x["steps_per_cpu_s"] and y["steps_per_cpu_s"]]
            if cpu_pairs:
                cr, cl, ch = ratio_of_means_ci([x["steps_per_cpu_s"] for x, _ in cpu_pairs],
                                               [y["steps_per_cpu_s"] for _, y in cpu_pairs])
                line += f"; steps per CPU s ours / {peer} {cr:.2f}x [{cl:.2f}, {ch:.2f}] over {len(cpu_pairs)} seeds"
            both_cpu = [(x, y) for x, y in pairs
                        if x["to_threshold_cpu_s"] is not None and y["to_threshold_cpu_s"] is not None]
            if both_cpu:
                tr, tl, th = ratio_of_means_ci([y["to_threshold_cpu_s"] for _, y in both_cpu],
                                               [x["to_threshold_cpu_s"] for x, _ in both_cpu])
                line += f"; CPU s to threshold {peer} / ours {tr:.2f}x [{tl:.2f}, {th:.2f}] over {len(both_cpu)} seeds"
            only_ours = sum(x["to_threshold_s"] is not None and y["to_threshold_s"] is None for x, y in pairs)
            if only_ours:
                line += f"; {only_ours} seed(s) reached it only in ours"
            print(line)


# -------------------------------------------------------------------------------------------------- main ---
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", nargs="*", help=f"default: all of {', '.join(ROWS)}")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", action="append", default=[], metavar="ROW=STEPS",
                        help="env-step budget of a row (defaults: " +
                        ", ".join(f"{r} {s['budget']:,}" for r, s in ROWS.items()) + ")")
    parser.add_argument("--threshold", action="append", default=[], metavar="ROW=RETURN",
                        help="the fixed return (in the row's unit) for the time-to-return figure")
    parser.add_argument("--only", choices=["ours", "epymarl", "benchmarl"], action="append",
                        help="run only these sides (repeatable); default: ours, EPyMARL, and BenchMARL where given")
    parser.add_argument("--quick", action="store_true", help="smoke check: seed 0, tiny budgets, 5 eval episodes")
    parser.add_argument("--parse", action="store_true", help="run nothing: tabulate the logs given below")
    parser.add_argument("--epymarl", help="EPyMARL checkout (holds src/main.py)")
    parser.add_argument("--epymarl-python", help="python of EPyMARL's venv")
    parser.add_argument("--benchmarl-python", help="python of BenchMARL's venv (mappo row only)")
    parser.add_argument("--ours-python", default=sys.executable, help="python for our examples (default: this one)")
    parser.add_argument("--ours-root", action="append", default=[], metavar="ROW=PATH",
                        help="run that row's example from another checkout (default: this one)")
    parser.add_argument("--ours-args", action="append", default=[], metavar="ROW=ARGS",
                        help='extra flags for that row\'s example, e.g. mappo="--actors 2"')
    parser.add_argument("--results-jsonl", action="append", default=[], help="--parse: a file written by --out")
    parser.add_argument("--epymarl-results", action="append", default=[], help="--parse: a sacred results root")
    parser.add_argument("--benchmarl-results", action="append", default=[], metavar="ROW=DIR", help="--parse")
    parser.add_argument("--ours-results", action="append", default=[], metavar="ROW=DIR", help="--parse")
    parser.add_argument("--cpu-trace", action="append", default=[],
                        help="samples written by cpu_trace.py: CPU seconds to the threshold, steps per CPU s")
    parser.add_argument("--workdir", default="runs/marl", help="logs and results of the runs (kept)")
    parser.add_argument("--jobs", type=int, default=1, choices=[1, 2], help="2: a seed's runs side by side")
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--out", help="append one JSON line per finished run to this file")
    args = parser.parse_args()
    rows = args.rows or list(ROWS)
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"unknown row(s) {unknown}; choose from {list(ROWS)}")
    thresholds = {}
    for spec in args.threshold:
        row, _, value = spec.partition("=")
        thresholds[row] = float(value)
    if args.parse:
        results = [r for r in collect(args) if r["row"] in rows]
        for trace in args.cpu_trace:
            attach_cpu_trace(results, trace)
        report(results, thresholds)
        return
    budgets = {r: (QUICK_BUDGET[r] if args.quick else ROWS[r]["budget"]) for r in ROWS}
    for spec in args.budget:
        row, _, value = spec.partition("=")
        if row not in ROWS:
            parser.error(f"--budget {spec!r}: unknown row")
        budgets[row] = int(float(value))
    seeds = args.seeds[:1] if args.quick else args.seeds
    sides = args.only or ["ours", "epymarl"] + (["benchmarl"] if args.benchmarl_python else [])
    if "epymarl" in sides and not (args.epymarl and args.epymarl_python):
        parser.error("EPyMARL runs need --epymarl and --epymarl-python (or --only ours)")
    if "benchmarl" in sides and not args.benchmarl_python:
        parser.error("BenchMARL runs need --benchmarl-python")
    print(f"load average at start: {loadavg()}; budgets {budgets}; seeds {seeds}", flush=True)
    results: list[dict] = []

    def done(result: dict) -> None:
        results.append(result)
        short = {k: v for k, v in result.items() if not k.startswith("curve")}
        print(json.dumps(short), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(result) + "\n")

    for row in rows:
        for i, seed in enumerate(seeds):
            order = [lib for lib in sides if lib != "benchmarl" or row == "mappo"]
            if i % 2:
                order.reverse()
            if args.jobs == 1:
                for lib in order:
                    done(run_one(args, lib, row, seed, budgets[row]))
            else:
                with ThreadPoolExecutor(2) as pool:
                    for result in pool.map(lambda lib, row=row, seed=seed: run_one(args, lib, row, seed, budgets[row]),
                                           order):
                        done(result)
    for trace in args.cpu_trace:
        attach_cpu_trace(results, trace)
    report(results, thresholds)


if __name__ == "__main__":
    main()
