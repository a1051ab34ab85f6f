"""Joint steps per second of mpe2's scenarios: the peer (PettingZoo's ``parallel_env`` of mpe2, "raw"), our
``MultiAgentEnv`` through ``parallel_env`` ("old"), our ``MultiAgentEnv``'s direct step ("new"), and PARL's
``MAenv`` on each path.

Pre-drawn actions, CPU time of this process (``time.process_time``), rounds interleaved over the variants; prints
the best round of each and the median over rounds of each round's ratio to raw (steadier under load).

    python benchmarks/marl/env_speed.py --steps 3000 --rounds 7 [--only spread]
"""
import argparse
import importlib
import statistics
import time

import numpy as np

from parl_core.env import MAenv, make_multiagent_env

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--steps", type=int, default=3000, help="joint steps per round")
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--only", default=None, help="run only the cases whose name contains this")
args = parser.parse_args()
STEPS, ROUNDS, ONLY = args.steps, args.rounds, args.only

def draw(env, n, rng):
    if env.discrete:
        return np.stack([rng.integers(0, m, n) for m in env.act_dims], 1)
    return rng.uniform(env.action_low, env.action_high, (n, *env.action_low.shape)).astype(np.float32)

def raw(module, kw):
    def run(n):
        probe = make_multiagent_env(f"mpe2:{module}", **kw)
        acts = draw(probe, n, np.random.default_rng(0))
        if probe.discrete:
            acts = [dict(zip(probe.agents, a, strict=True)) for a in acts.tolist()]
        else:
            pairs = list(enumerate(zip(probe.agents, probe.act_dims, strict=True)))
            acts = [{ag: a[i, :d] for i, (ag, d) in pairs} for a in acts]
        env = importlib.import_module(f"mpe2.{module}").parallel_env(**kw)
        env.reset(seed=0)
        t = time.process_time()
        for a in acts:
            env.step(a)
            if not env.agents:
                env.reset()
        return n / (time.process_time() - t)
    return run

def wrapped(module, kw, direct):
    def run(n):
        env = make_multiagent_env(f"mpe2:{module}", **kw)
        if not direct:
            env._structure_unsupported = "old path"
        acts = draw(env, n, np.random.default_rng(0))
        env.reset(seed=0)
        t = time.process_time()
        for a in acts:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return n / (time.process_time() - t)
    return run

def maenv(direct):
    def run(n):
        env = MAenv("simple_spread")
        if not direct:
            env._ma._structure_unsupported = "old path"
        acts = np.random.default_rng(0).integers(0, 5, (n, 3)).tolist()
        env.reset()
        t = time.process_time()
        for a in acts:
            _, _, done, _ = env.step(a)
            if done[0]:
                env.reset()
        return n / (time.process_time() - t)
    return run

SPREAD = {"N": 3, "local_ratio": 0.0, "max_cycles": 25}
BOX = {**SPREAD, "continuous_actions": True}
cases = [
    ("simple_spread_v3 (N=3, local_ratio=0), Discrete", [("raw", raw("simple_spread_v3", SPREAD)),
        ("old", wrapped("simple_spread_v3", SPREAD, False)), ("new", wrapped("simple_spread_v3", SPREAD, True)),
        ("MAenv old", maenv(False)), ("MAenv new", maenv(True))]),
    ("simple_spread_v3 (N=3, local_ratio=0), Box", [("raw", raw("simple_spread_v3", BOX)),
        ("old", wrapped("simple_spread_v3", BOX, False)), ("new", wrapped("simple_spread_v3", BOX, True))]),
]
for module, kw in [("simple_speaker_listener_v4", {}), ("simple_tag_v3", {}), ("simple_world_comm_v3", {}),
                   ("simple_reference_v3", {})]:
    cases.append((f"{module}, Discrete", [("raw", raw(module, kw)), ("old", wrapped(module, kw, False)),
                                          ("new", wrapped(module, kw, True))]))
with open("/proc/loadavg") as f:
    print("load before:", f.read().split()[:3], flush=True)
for name, runs in cases:
    if ONLY and ONLY not in name:
        continue
    res = {k: [] for k, _ in runs}
    for _ in range(ROUNDS):  # interleaved rounds
        for k, f in runs:
            res[k].append(f(STEPS))
    best = {k: max(v) for k, v in res.items()}
    ratios = {k: statistics.median(a / b for a, b in zip(res[k], res["raw"], strict=True)) for k in res if k != "raw"}
    print(f"{name}: best " + ", ".join(f"{k} {v:,.0f}/s" for k, v in best.items()), flush=True)
    new_old = statistics.median(a / b for a, b in zip(res["new"], res["old"], strict=True))
    print("   median per-round ratio to raw: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
          + f"; new/old per round {new_old:.2f}x", flush=True)
    print("   rounds: " + "; ".join(f"{k} {[round(x) for x in v]}" for k, v in res.items()), flush=True)
with open("/proc/loadavg") as f:
    print("load after:", f.read().split()[:3], flush=True)
