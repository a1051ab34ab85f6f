"""The peer for the ES-on-MuJoCo row: EvoTorch's PGPE with ClipUp on a gymnasium MuJoCo env, GymNE on Ray actors.

PGPE / ClipUp with the settings of EvoTorch's MuJoCo example (``center_learning_rate=0.01125``,
``stdev_learning_rate=0.1``, ``optimizer_config={"max_speed": 0.015}``, ``radius_init=0.27``), symmetric sampling,
observation normalisation, the same ``obs -> 32 -> 32 -> act`` tanh MLP as ``examples/es_mujoco/train.py`` and the
same population (``--popsize``, default 40 = that example's ``min_episodes_per_batch``). Runs until
``--max-env-steps`` or until the centre's mean return over ``--eval-episodes`` (every ``--eval-interval`` steps)
reaches ``--target``. Prints one JSON line: ``env_steps``, ``env_steps_per_s`` (sampling time only), ``wall_s``
(from process start), ``eval_return``, ``reached_target_s``.
"""

from __future__ import annotations

import argparse
import json
import time

import psutil
import torch
from evotorch.algorithms import PGPE
from evotorch.neuroevolution import GymNE
from evotorch_cartpole import evaluate  # the same evaluation loop (argmax or clipped actions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--popsize", type=int, default=40)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--max-env-steps", type=int, default=200_000)
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--eval-interval", type=int, default=200_000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--max-wall-s", type=float, default=None,
                        help="stop after this many seconds of wall-clock (the target not reached by then)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    h = args.hidden
    problem = GymNE(args.env, f"Linear(obs_length, {h}) >> Tanh() >> Linear({h}, {h}) >> Tanh() >> "
                    "Linear({h}, act_length)".replace("{h}", str(h)),
                    observation_normalization=True, num_actors=args.actors)
    searcher = PGPE(problem, popsize=args.popsize, center_learning_rate=0.01125, stdev_learning_rate=0.1,
                    optimizer="clipup", optimizer_config={"max_speed": 0.015}, radius_init=0.27,
                    symmetric=True)
    sampling_s, next_eval, eval_return, reached = 0.0, args.eval_interval, float("nan"), None
    steps = 0
    start = psutil.Process().create_time()
    while steps < args.max_env_steps and (args.max_wall_s is None or time.time() - start < args.max_wall_s):
        t0 = time.time()
        searcher.step()
        sampling_s += time.time() - t0
        steps = int(searcher.status["total_interaction_count"])
        out_of_time = args.max_wall_s is not None and time.time() - start >= args.max_wall_s
        if steps >= next_eval or steps >= args.max_env_steps or out_of_time:
            next_eval += args.eval_interval
            policy = problem.to_policy(searcher.status["center"])  # observation normalisation applied
            eval_return = evaluate(policy, args.eval_episodes, 10**7, env_name=args.env)
            print(f"steps {steps}  eval {eval_return:.1f}  steps/s {steps / sampling_s:.0f}", flush=True)
            if args.target is not None and eval_return >= args.target:
                reached = time.time() - psutil.Process().create_time()
                break
    print(json.dumps({"peer": "evotorch PGPE/ClipUp GymNE", "env": args.env, "actors": args.actors,
                      "popsize": args.popsize, "num_params": int(problem.solution_length), "env_steps": steps,
                      "env_steps_per_s": steps / sampling_s, "eval_return": eval_return,
                      "reached_target_s": reached, "wall_s": time.time() - psutil.Process().create_time(),
                      "loadavg": open("/proc/loadavg").read().split()[:3]}), flush=True)


if __name__ == "__main__":
    main()
