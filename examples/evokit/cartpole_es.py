"""EvoKit on CartPole-v1: OpenAI-style ES on a small numpy MLP, sampling on parl-remote actors.

The algorithm box (Salimans et al. 2017, with EvoKit's names):

1. ``agent = ESAgent(NumpyMLP([4, 8, 2]))``, ``load_config(cartpole_config.prototxt)``, ``init_solver()``.
2. Each generation the master sends ``agent.get_sampling_state()`` (the parameters and the iteration id)
   to every sampler. A sampler (``CartPoleSampler``: a ``@parl_remote.remote_class`` actor when
   ``--actors N > 0``, an in-process object when ``--actors 0``) draws ``--pop / N`` perturbations with its
   sampling clone (``clone.add_noise()``, mirrored pairs), plays one episode per perturbation (all of them at
   once in gymnasium's vectorised CartPole) and returns the serialised ``SamplingInfo``s and the rewards: a few
   bytes per sample.
3. ``agent.update(sampling_infos, rewards)`` rebuilds the noise from the infos (rank-centred fitness, Adam).
4. The next generation's sampling starts; meanwhile, if a sample reached 500, the master's greedy policy plays
   ``--eval-episodes`` episodes. The run stops when their mean is 500.

Usage::

    python examples/evokit/cartpole_es.py --seed 0 --logdir runs/evokit_cartpole/seed0 --actors 2

Writes ``<logdir>/summary.json`` (``eval_return_mean``, ``eval_episodes``, ``env_steps``, ``wall_s`` = seconds
from process start to solved, start-up included), ``<logdir>/model/`` (the inference model and the solver) and,
unless ``--no-tensorboard``, tensorboard scalars (written after the timed part: importing tensorboardX takes ~1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import gymnasium as gym
import numpy as np
import psutil

from evokit import ESAgent, NumpyMLP, SamplingInfo, load_config
from evokit.config import config_to_prototxt, parse_prototxt

HERE = os.path.dirname(os.path.abspath(__file__))
LAYER_SIZES = [4, 8, 2]
MAX_RETURN = 500.0


def play_batch(env: gym.vector.VectorEnv, mlp: NumpyMLP, params: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """Play one episode per parameter vector, all at once.

    Args:
        env: a vectorised CartPole with ``len(params)`` sub-environments.
        mlp: the network (its own weights are not used).
        params: float32 [P, num_params] one policy per sub-environment (greedy action = argmax of the logits).
        seed: the vector env's reset seed (start states are drawn from it).

    Returns:
        ``(returns float32 [P], env_steps)``: undiscounted episode returns and the number of steps played
        (steps of finished sub-environments are not counted).
    """
    obs, _ = env.reset(seed=seed)
    pop = params.shape[0]
    returns = np.zeros(pop, dtype=np.float32)
    alive = np.ones(pop, dtype=bool)
    steps = 0
    while alive.any():
        actions = mlp.forward_population(params, obs).argmax(axis=-1)
        obs, reward, terminated, truncated, _ = env.step(actions)
        returns += reward * alive
        steps += int(alive.sum())
        alive &= ~(terminated | truncated)
    return returns, steps


class CartPoleSampler:
    """Evaluates perturbations of the master's policy; one per process (a parl-remote actor) or in-process.

    Args:
        config_text: the EvoKit config in protobuf text format.
        sampler_id: distinct per sampler, so samplers draw different noise.
        num_envs: episodes played at once (the samples per call).
    """

    def __init__(self, config_text: str, sampler_id: int, num_envs: int) -> None:
        self.agent = ESAgent(NumpyMLP(LAYER_SIZES), config=parse_prototxt(config_text))
        self.agent.init_solver()
        self.clone = self.agent.clone(sampler_id)
        self.mlp = self.agent.model
        self.env = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")
        self.num_envs = num_envs

    def sample(self, sampling_state: dict, episode_seed: int) -> tuple[list[bytes], np.ndarray, int]:
        """Draw ``num_envs`` samples of the master's iteration and play them.

        Returns:
            ``(sampling_infos as bytes, rewards float32 [num_envs], env_steps)``.
        """
        self.agent.set_sampling_state(sampling_state)
        infos, params = [], []
        for _ in range(self.num_envs):
            infos.append(self.clone.add_noise())
            params.append(self.clone.params)
        rewards, steps = play_batch(self.env, self.mlp, np.stack(params), episode_seed)
        return [i.to_bytes() for i in infos], rewards, steps


def evaluate(agent: ESAgent, episodes: int, seed: int) -> tuple[float, int]:
    """Mean greedy return of the master's policy over ``episodes`` episodes (played at once)."""
    env = gym.make_vec("CartPole-v1", num_envs=episodes, vectorization_mode="vector_entry_point")
    params = np.repeat(agent.params[None, :], episodes, axis=0)
    returns, steps = play_batch(env, agent.model, params, seed)
    env.close()
    return float(returns.mean()), steps


def make_samplers(config_text: str, actors: int, pop: int, seed: int) -> tuple[list, str]:
    """``actors`` parl-remote actors (embedded local cluster), or one in-process sampler when ``actors == 0``
    or when parl-remote is not installed (``pip install "parl-evokit[remote]"``)."""
    try:
        import parl_remote
    except ImportError:
        if actors > 0:
            print("parl-remote is not installed: sampling in-process (pip install 'parl-evokit[remote]')", flush=True)
        actors = 0
    if actors <= 0:
        return [CartPoleSampler(config_text, 1000 * seed, pop)], "in-process"

    parl_remote.connect()
    remote_sampler = parl_remote.remote_class(wait=False)(CartPoleSampler)
    per_actor = pop // actors
    return [remote_sampler(config_text, 1000 * seed + i, per_actor) for i in range(actors)], "parl-remote"


def submit(samplers: list, mode: str, state: dict, episode_seed: int):
    """Start ``sample`` on every sampler; return a function that waits for and returns their results.

    Remote actors start at once (``wait=False`` futures), so the master can evaluate while they sample;
    in-process samplers run when the results are asked for.
    """
    if mode == "in-process":
        return lambda: [s.sample(state, episode_seed + 1000 * i) for i, s in enumerate(samplers)]
    futures = [s.sample(state, episode_seed + 1000 * i) for i, s in enumerate(samplers)]
    return lambda: [f.get() for f in futures]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default="runs/evokit_cartpole")
    parser.add_argument("--config", default=os.path.join(HERE, "cartpole_config.prototxt"))
    parser.add_argument("--actors", type=int, default=2, help="parl-remote sampling actors; 0 = in-process")
    parser.add_argument("--pop", type=int, default=40, help="samples per generation (even: mirrored pairs)")
    parser.add_argument("--max-generations", type=int, default=200)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--no-tensorboard", action="store_true")
    args = parser.parse_args(argv)
    if args.pop % 2 or (args.actors > 0 and args.pop % (2 * args.actors)):
        parser.error("--pop must be even and divisible by 2 * --actors (mirrored pairs per actor)")

    config = load_config(args.config)
    config.solver.sampling.gaussian_sampling.seed += args.seed
    config_text = config_to_prototxt(config)
    agent = ESAgent(NumpyMLP(LAYER_SIZES, seed=args.seed), config=config)
    agent.init_solver()
    samplers, mode = make_samplers(config_text, args.actors, args.pop, args.seed)
    startup_s = time.time() - psutil.Process().create_time()

    history, env_steps, eval_return, eval_steps, solved_gen = [], 0, float("nan"), 0, None
    pending = submit(samplers, mode, agent.get_sampling_state(), episode_seed=10_000 * args.seed)
    for gen in range(args.max_generations):
        results = pending()
        infos = [SamplingInfo.from_bytes(b) for r in results for b in r[0]]
        rewards = np.concatenate([r[1] for r in results])
        env_steps += sum(r[2] for r in results)
        agent.update(infos, rewards)
        # the next generation samples (on remote actors) while the master evaluates the new model
        pending = submit(samplers, mode, agent.get_sampling_state(), episode_seed=10_000 * args.seed + 100 * (gen + 1))
        row = {"generation": gen, "reward_mean": float(rewards.mean()), "reward_max": float(rewards.max()),
               "env_steps": env_steps}
        if rewards.max() >= MAX_RETURN:
            eval_return, steps = evaluate(agent, args.eval_episodes, seed=10**6 + gen)
            eval_steps += steps
            row["eval_return"] = eval_return
        history.append(row)
        print(f"gen {gen:3d}  reward mean {row['reward_mean']:6.1f} max {row['reward_max']:5.0f}  "
              f"eval {row.get('eval_return', float('nan')):5.1f}  steps {env_steps}", flush=True)
        if row.get("eval_return", 0.0) >= MAX_RETURN:
            solved_gen = gen
            break
    wall_s = time.time() - psutil.Process().create_time()

    os.makedirs(args.logdir, exist_ok=True)
    agent.save_inference_model(os.path.join(args.logdir, "model"))
    agent.save_solver(os.path.join(args.logdir, "model"))
    summary = {
        "env": "CartPole-v1", "algorithm": "evokit BASIC_ES", "seed": args.seed, "sampling": mode,
        "actors": args.actors, "pop": args.pop, "eval_return_mean": eval_return,
        "eval_episodes": args.eval_episodes, "env_steps": env_steps, "eval_env_steps": eval_steps,
        "generations": len(history), "solved": solved_gen is not None, "solved_generation": solved_gen,
        "wall_s": round(wall_s, 3), "startup_s": round(startup_s, 3),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    with open(os.path.join(args.logdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    if not args.no_tensorboard:
        from tensorboardX import SummaryWriter

        with SummaryWriter(args.logdir) as writer:
            for row in history:
                for key in ("reward_mean", "reward_max", "eval_return"):
                    if key in row:
                        writer.add_scalar(f"train/{key}", row[key], row["env_steps"])
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    result = main()
    sys.exit(0 if result["solved"] else 1)
