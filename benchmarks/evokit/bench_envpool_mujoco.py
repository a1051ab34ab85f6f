"""MuJoCo env steps/s on EnvPool (``parl.env.EnvPoolMuJoCo``) against gymnasium, same task version, same run.

Two measures, each in alternating rounds (the order of the two paths flips every round) of ``--window-s``
seconds, median over ``--rounds``; ratios EnvPool / gymnasium printed:

1. ``vector``: the vector env alone, uniform random actions, E envs stepped together:
   ``gym.make_vec(task, E, vectorization_mode="sync")`` against ``EnvPoolMuJoCo(task, E)`` (one EnvPool
   thread). E = 1 is SAC's and TD3's training env (examples/sac, examples/td3: one env step per update), E = 10
   their evaluation env, E = 20 ES's episodes per actor (examples/es_mujoco's defaults with 2 actors).
2. ``es``: examples/es_mujoco's actor in this process (``ESActor.sample``, numpy policy 32x32, ``--pairs``
   mirrored pairs played in lockstep until every episode ends), gymnasium envs against ``--envpool``: env steps
   of the episodes per second of ``--es-calls`` calls after a warm-up call, and the mean episode return of
   those calls (the same seed and actor id draw the same perturbations on both paths; the initial states
   come from each path's own generator, so returns agree in distribution, not episode by episode).

``--measures returns``: "returns unchanged", the mean return (with its standard error) and length of
``--episodes`` episodes of one fixed deterministic policy on each path (no timing).

Usage::

    python benchmarks/evokit/bench_envpool_mujoco.py --tasks HalfCheetah-v5 Hopper-v5 --rounds 3 --window-s 3
    python benchmarks/evokit/bench_envpool_mujoco.py --measures returns --episodes 100
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import gymnasium as gym
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "es_mujoco"))


def loadavg() -> list[str]:
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def vector_steps_per_s(task: str, num_envs: int, envpool: bool, window_s: float, seed: int) -> float:
    """Env steps/s (E per call) of the vector env alone, uniform random actions."""
    from parl_core.env.envpool_mujoco import EnvPoolMuJoCo

    if envpool:
        envs = EnvPoolMuJoCo(task, num_envs, seed=seed)
    else:
        envs = gym.make_vec(task, num_envs=num_envs, vectorization_mode="sync")
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    space = envs.single_action_space
    actions = rng.uniform(space.low, space.high, (256, num_envs, *space.shape)).astype(np.float32)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < window_s:
        envs.step(actions[steps // num_envs % 256])
        steps += num_envs
    elapsed = time.perf_counter() - start
    envs.close()
    return steps / elapsed


def make_es_actor(task: str, envpool: bool, pairs: int):
    import train as es_train
    from actor import ESActor
    from policy import make_policy

    from evokit import ESAgent
    from evokit.config import config_to_prototxt

    hp = es_train.parse_args(["--env_name", task, "--noise_size", "2000000"])
    obs_dim, act_dim = es_train.check_env(task)
    agent = ESAgent(make_policy(hp.backend, obs_dim, act_dim, hp.hidden, seed=0))
    config = es_train.evokit_config(hp, agent.num_params)
    agent.load_config(config).init_solver()
    hp_dict = {k: getattr(hp, k) for k in ("env_name", "hidden", "backend", "filter_update_prob",
                                            "action_noise_std", "eval_prob", "seed")}
    hp_dict["envpool"] = envpool
    actor = ESActor(config_to_prototxt(config), hp_dict, actor_id=7)
    from evokit import MeanStdFilter

    return actor, agent.get_sampling_state(), MeanStdFilter((obs_dim,)).state_dict()


def es_steps_per_s(task: str, envpool: bool, calls: int, pairs: int) -> tuple[float, list[float]]:
    """(env steps/s of ``calls`` ES actor ``sample`` calls, their episode returns): the same ``calls`` calls (the
    same perturbations) on both paths."""
    actor, state, filter_state = make_es_actor(task, envpool, pairs)
    actor._envpool(2 * pairs) if envpool else actor._envs(2 * pairs)  # build the envs before the clock starts
    steps, returns, start = 0, [], time.perf_counter()
    for call in range(1, calls + 1):
        out = actor.sample(state, filter_state, pairs, 1000 * call)
        steps += int(out["lengths"].sum())
        returns += out["returns"].tolist()
    return steps / (time.perf_counter() - start), returns


def fixed_policy_returns(task: str, envpool: bool, episodes: int, seed: int = 0) -> tuple[float, float, float]:
    """(mean return, its standard error, mean length) of ``episodes`` episodes of one fixed deterministic policy
    ``a = clip(tanh(W obs), low, high)``, ``W ~ N(0, 0.3^2)`` drawn with ``seed``: the same policy on both paths,
    initial states from each path's own generator."""
    from parl_core.env.envpool_mujoco import EnvPoolMuJoCo

    if envpool:
        envs = EnvPoolMuJoCo(task, episodes, seed=seed)
    else:
        envs = gym.make_vec(task, num_envs=episodes, vectorization_mode="sync")
    space = envs.single_action_space
    weights = np.random.default_rng(seed).normal(0.0, 0.3, (space.shape[0], envs.single_observation_space.shape[0]))
    obs, _ = envs.reset(seed=seed)
    returns, lengths, done = np.zeros(episodes), np.zeros(episodes), np.zeros(episodes, bool)
    while not done.all():
        obs, reward, terminated, truncated, _ = envs.step(np.clip(np.tanh(obs @ weights.T), space.low, space.high))
        returns += reward * ~done
        lengths += ~done
        done |= terminated | truncated
    envs.close()
    return float(returns.mean()), float(returns.std() / np.sqrt(episodes)), float(lengths.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["HalfCheetah-v5", "Hopper-v5"])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 10, 20])
    parser.add_argument("--pairs", type=int, default=10, help="es: mirrored pairs per sample call (2x episodes)")
    parser.add_argument("--es-calls", type=int, default=5, help="es: sample calls timed per round")
    parser.add_argument("--window-s", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measures", nargs="+", choices=("vector", "es", "returns"), default=["vector", "es"])
    parser.add_argument("--episodes", type=int, default=100, help="returns: episodes of the fixed policy per path")
    args = parser.parse_args()
    import envpool

    print(json.dumps({"loadavg": loadavg(), "envpool": envpool.__version__, "gymnasium": gym.__version__,
                      "window_s": args.window_s, "rounds": args.rounds}), flush=True)
    table: dict[tuple, dict[str, list[float]]] = {}
    if "returns" in args.measures:
        for task in args.tasks:
            out = {path: fixed_policy_returns(task, path == "envpool", args.episodes)
                   for path in ("gymnasium", "envpool")}
            print(json.dumps({"task": task, "measure": "returns", "episodes": args.episodes,
                              **{f"{path}_return_sem_length": [round(x, 2) for x in v] for path, v in out.items()}}))
    for task in args.tasks:
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            if not {"vector", "es"} & set(args.measures):
                break
            if "vector" in args.measures:
                for n in args.num_envs:
                    for envpool_path in order:
                        fps = vector_steps_per_s(task, n, envpool_path, args.window_s, seed=r)
                        path = "envpool" if envpool_path else "gymnasium"
                        table.setdefault((task, f"vector E={n}"), {}).setdefault(path, []).append(fps)
                        print(json.dumps({"task": task, "measure": "vector", "num_envs": n, "round": r, "path": path,
                                          "steps_per_s": round(fps, 1), "loadavg": loadavg()}), flush=True)
            if "es" in args.measures:
                for envpool_path in order:
                    fps, returns = es_steps_per_s(task, envpool_path, args.es_calls, args.pairs)
                    path = "envpool" if envpool_path else "gymnasium"
                    row = table.setdefault((task, f"es actor {2 * args.pairs} episodes"), {})
                    row.setdefault(path, []).append(fps)
                    if r == 0:  # every round plays the same perturbations: their returns once
                        row.setdefault(f"{path}_return", []).extend(returns)
                    print(json.dumps({"task": task, "measure": "es", "round": r, "path": path,
                                      "steps_per_s": round(fps, 1), "mean_return": round(float(np.mean(returns)), 2),
                                      "loadavg": loadavg()}), flush=True)
    print(f"\n{'task':<16}{'measure':<24}{'gymnasium steps/s':>18}{'envpool steps/s':>16}{'ratio':>7}"
          f"{'return gym / envpool (mean+-s.e.)':>36}")
    for (task, measure), row in table.items():
        gym_fps, pool_fps = statistics.median(row["gymnasium"]), statistics.median(row["envpool"])
        rets = " / ".join(f"{np.mean(row[k]):.1f}+-{np.std(row[k]) / np.sqrt(len(row[k])):.1f}"
                          for k in ("gymnasium_return", "envpool_return") if k in row)
        print(f"{task:<16}{measure:<24}{gym_fps:>18.0f}{pool_fps:>16.0f}{pool_fps / gym_fps:>7.2f}{rets:>36}")
    print(json.dumps({"loadavg_end": loadavg()}))


if __name__ == "__main__":
    main()
