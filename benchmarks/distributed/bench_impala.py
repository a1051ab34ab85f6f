"""IMPALA throughput: examples/impala (parl-remote actors) against RLlib's IMPALA, same setup, same run.

Both sides: ``--actors`` actor / env-runner processes, ``--envs-per-actor`` envs each, unrolls of
``--unroll-length`` steps, the learner in the driver process training on one unroll per update
(``train_batch_size_per_learner = envs_per_actor x unroll_length``), separate 64-64 tanh policy and value
MLPs (CartPole) or PARL's 42x42 conv net / RLlib's default conv net (Atari). Measured: env frames per
second **consumed by the learner** over a fixed window after a warm-up (Atari: frames = 4 x agent steps),
plus, for ours, the actor-side frames/s, the time from an actor finishing an unroll to the learner having
it, and the per-process CPU seconds in the window; rounds alternate ours / RLlib and the ratios are printed.

Usage (in the venv of benchmarks/requirements-distributed.txt; see that file)::

    python benchmarks/distributed/bench_impala.py --env CartPole-v1 --rounds 3
    python benchmarks/distributed/bench_impala.py --env PongNoFrameskip-v4 --rounds 2 --window-s 60

Prints ``/proc/loadavg`` first and one JSON line per measurement, then a summary table.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[2]
FRAME_SKIP = {True: 4, False: 1}


def loadavg() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def load_example():
    """examples/impala/train.py as a module (its Actor, models and settings)."""
    spec = importlib.util.spec_from_file_location("impala_train", ROOT / "examples" / "impala" / "train.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["impala_train"] = module
    spec.loader.exec_module(module)
    return module


def cpu_s(pids: list[int]) -> dict[int, float]:
    out = {}
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            out[pid] = t.user + t.system
        except psutil.Error:
            out[pid] = float("nan")
    return out


def run_ours(args: argparse.Namespace, ex) -> dict:
    """The example's learner loop (IMPALA.learn on each unroll as it completes, weights with the next call)."""
    import torch

    import parl

    torch.set_num_threads(1)
    atari = ex.is_atari(args.env)
    cfg = dict(ex.CONFIGS["atari" if atari else "vector"])
    probe = ex.make_env(args.env, cfg.get("dim", 42))
    model = ex.build_model(probe, cfg)
    alg = parl.algorithms.IMPALA(model, sample_batch_steps=args.unroll_length, gamma=cfg["gamma"],
                                 learning_rate=cfg["lr"])
    parl.connect(cpu_num=args.actors)
    actors = [ex.Actor(args.env, args.envs_per_actor, args.unroll_length, cfg, 100 * i, args.envpool)
              for i in range(args.actors)]
    pids = [a.pid().result() for a in actors]
    pending = {}
    weights = model.get_weights()
    for slot, actor in enumerate(actors):
        for _ in range(args.inflight):
            pending[actor.sample(weights)] = slot
    start = time.perf_counter()  # actors are up and their first calls queued (as RLlib's after its first batch)
    window_start = start + args.warmup_s
    window_end = window_start + args.window_s
    consumed, sampled_s, delivery_s, cpu0, t0 = 0, 0.0, [], None, None
    while True:
        now = time.perf_counter()
        if now >= window_end:
            break
        if cpu0 is None and now >= window_start:
            cpu0, t0 = cpu_s([os.getpid(), *pids]), now
        done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
        for future in done:
            slot = pending.pop(future)
            batch = future.result()
            received = time.time()
            alg.learn(ex.env_major(batch["obs"]), ex.env_major(batch["actions"]),
                      ex.env_major(batch["behaviour_logits"]), ex.env_major(batch["rewards"]),
                      ex.env_major(batch["dones"]), cfg["lr"], cfg["entropy_coeff"])
            weights = model.get_weights()
            pending[actors[slot].sample(weights)] = slot
            if cpu0 is not None:
                consumed += batch["rewards"].size
                sampled_s += batch["t_end"] - batch["t_start"]
                delivery_s.append(received - batch["t_end"])
    elapsed = time.perf_counter() - t0
    cpu1 = cpu_s([os.getpid(), *pids])
    for future in pending:
        future.result()
    parl.disconnect()
    frames = consumed * FRAME_SKIP[atari]
    return {"framework": "parl", "envpool": args.envpool, "learner_frames_per_s": frames / elapsed,
            "actor_frames_per_s_each": frames / sampled_s if sampled_s else float("nan"),
            "unroll_delivery_ms_median": 1e3 * statistics.median(delivery_s) if delivery_s else float("nan"),
            "weights_bytes": int(sum(w.nbytes for w in weights.values())),
            "cpu_s": {"learner": cpu1[os.getpid()] - cpu0[os.getpid()],
                      **{f"actor{i}": cpu1[p] - cpu0[p] for i, p in enumerate(pids)}},
            "window_s": elapsed}


def _find(result: dict, key: str):
    """The value of ``key`` anywhere in RLlib's nested result dict (learner side first)."""
    stack = [result.get("learners", {}), result]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            if key in node and not isinstance(node[key], dict):
                return node[key]
            stack.extend(v for v in node.values() if isinstance(v, dict))
    return None


def run_rllib(args: argparse.Namespace) -> dict:
    """RLlib's IMPALA (new API stack): local learner in the driver, ``--actors`` env runners."""
    import ray
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    atari = "NoFrameskip" in args.env or args.env.startswith("ALE/")
    ray.init(num_cpus=args.actors + 1, include_dashboard=False, log_to_driver=bool(os.environ.get("BENCH_RAY_LOGS")))
    env = args.env
    env_config = {}
    if atari:
        import ale_py
        import gymnasium as gym
        from ray.tune.registry import register_env

        from parl.env.atari_wrappers import wrap_deepmind

        def make(_config):
            gym.register_envs(ale_py)
            env = wrap_deepmind(gym.make(args.env), dim=42, obs_format="NHWC")
            # RLlib's CNN takes float32 frames (its own Atari helper scales them to [0, 1], as ours divides by 255)
            space = gym.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
            return gym.wrappers.TransformObservation(env, lambda obs: obs.astype(np.float32) / 255.0, space)

        register_env("parl_atari", make)
        env = "parl_atari"
        # the example's torso (PARL's IMPALA model): 42 -> 21 -> 11 ("same" padding) -> 1x1x256 (the last "valid")
        model = DefaultModelConfig(conv_filters=[[16, 4, 2], [32, 4, 2], [256, 11, 1]], conv_activation="relu",
                                   head_fcnet_hiddens=[], vf_share_layers=True)
    else:
        model = DefaultModelConfig(fcnet_hiddens=[64, 64], fcnet_activation="tanh", vf_share_layers=False)
    config = (IMPALAConfig().environment(env, env_config=env_config).framework("torch")
              .env_runners(num_env_runners=args.actors, num_envs_per_env_runner=args.envs_per_actor,
                           rollout_fragment_length=args.unroll_length, num_cpus_per_env_runner=1)
              .learners(num_learners=0)
              .training(train_batch_size_per_learner=args.envs_per_actor * args.unroll_length, lr=1e-3,
                        vf_loss_coeff=0.5, entropy_coeff=0.01)
              .rl_module(model_config=model)
              .reporting(min_time_s_per_iteration=1.0))
    algo = config.build_algo()
    runner_pids = [p for p in algo.env_runner_group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)]
    start = None  # the warm-up counts from the first trained batch (RLlib's env runners take ~25 s to start here)
    samples = []  # (time, trained env steps, sampled env steps)
    cpu0 = t0 = None
    while True:
        result = algo.train()
        now = time.perf_counter()
        trained = _find(result, "num_env_steps_trained_lifetime") or 0
        sampled = _find(result, "num_env_steps_sampled_lifetime") or 0
        if start is None:
            start = now if trained else None
            continue
        if cpu0 is None and now >= start + args.warmup_s:
            cpu0, t0 = cpu_s([os.getpid(), *runner_pids]), now
        samples.append((now, trained, sampled))
        if now >= start + args.warmup_s + args.window_s:
            break
    cpu1 = cpu_s([os.getpid(), *runner_pids])
    algo.stop()
    ray.shutdown()
    in_window = [s for s in samples if s[0] >= t0]
    first, last = in_window[0], in_window[-1]
    elapsed = last[0] - first[0]
    skip = FRAME_SKIP[atari]
    return {"framework": "rllib",
            "learner_frames_per_s": (last[1] - first[1]) * skip / elapsed if elapsed and last[1] else float("nan"),
            "sampled_frames_per_s": (last[2] - first[2]) * skip / elapsed if elapsed and last[2] else float("nan"),
            "cpu_s": {"learner": cpu1[os.getpid()] - cpu0[os.getpid()],
                      **{f"runner{i}": cpu1[p] - cpu0[p] for i, p in enumerate(runner_pids)}},
            "window_s": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--envs-per-actor", type=int, default=8)
    parser.add_argument("--unroll-length", type=int, default=20)
    parser.add_argument("--inflight", type=int, default=2, help="ours: calls queued per actor")
    parser.add_argument("--warmup-s", type=float, default=10.0)
    parser.add_argument("--window-s", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["parl", "rllib"], default=None, help="one side (in a subprocess)")
    parser.add_argument("--envpool", action="store_true", help="ours: Atari actors on EnvPool (bench_envpool.py)")
    args = parser.parse_args()
    if args.only:  # one measurement in a fresh process (no state shared between frameworks)
        out = run_ours(args, load_example()) if args.only == "parl" else run_rllib(args)
        print(json.dumps(dict(out, loadavg=loadavg())))
        return
    import subprocess

    print(json.dumps({"loadavg": loadavg(), "env": args.env, "actors": args.actors,
                      "envs_per_actor": args.envs_per_actor, "unroll_length": args.unroll_length}), flush=True)
    results: dict[str, list[dict]] = {"parl": [], "rllib": []}
    for round_ in range(args.rounds):
        for side in ("parl", "rllib") if round_ % 2 == 0 else ("rllib", "parl"):
            cmd = [sys.executable, __file__, "--only", side] + [a for a in sys.argv[1:] if a != "--only"]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.warmup_s + args.window_s + 400)
            if proc.returncode != 0:
                print(json.dumps({"round": round_, "side": side, "error": proc.stderr[-3000:]}), flush=True)
                continue
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            results[side].append(out)
            print(json.dumps(dict(out, round=round_)), flush=True)
    ours = [r["learner_frames_per_s"] for r in results["parl"]]
    peer = [r["learner_frames_per_s"] for r in results["rllib"]]
    pairs = [a / b for a, b in zip(ours, peer, strict=False) if b and np.isfinite(b)]
    print(json.dumps({"env": args.env, "parl_learner_frames_per_s": ours, "rllib_learner_frames_per_s": peer,
                      "ratios_per_round": [round(p, 2) for p in pairs],
                      "ratio_median": round(statistics.median(pairs), 2) if pairs else None,
                      "loadavg_end": loadavg()}))


if __name__ == "__main__":
    main()
