"""Evolution strategies on MuJoCo (Salimans et al. 2017) with EvoKit, sampling on parl-remote actors.

The learner holds an EvoKit ``ESAgent`` (BASIC_ES: mirrored sampling from the machine's shared noise table,
centred-rank fitness shaping, Adam with L2 weight decay ``l2_coeff``) and a :class:`evokit.MeanStdFilter`. Each
generation it sends the parameters and the filter's statistics to ``actor_num`` ``@parl.remote_class`` actors
(``actor.ESActor``); each plays ``2 * pairs`` perturbed episodes in lockstep and returns compact SamplingInfos,
returns, lengths and its filter increment. Rounds repeat until the batch holds ``min_episodes_per_batch`` episodes
and ``min_steps_per_batch`` env steps; then ``agent.update`` and the increments are merged into the filter.

A dead actor (its process killed) does not stop training: its episodes of the round are dropped, a replacement
is created (waiting for its CPU to come back), and the run goes on.

Hyper-parameters carry PARL's ES config names, as flags (``--noise_stdev 0.02``) or in a TOML / JSON file
(``--config es_config.toml``; flags override the file).

Usage::

    python examples/es_mujoco/train.py --env_name HalfCheetah-v5 --actor_num 2 --seed 0 --logdir runs/es/s0

    python examples/es_mujoco/train.py --resume runs/es/s0       # go on after a stop (same settings)

Writes ``<logdir>/summary.json`` (``eval_return_mean``, ``eval_episodes``, ``env_steps``, ``wall_s``, ...),
``<logdir>/curve.csv``, ``<logdir>/actor_pids.json`` (the live actors' pids), ``<logdir>/model/`` and
tensorboard scalars. Long runs (``parl.utils`` run harness, docs/long_runs.md): ``<logdir>/checkpoint.npz``
every ``--checkpoint-every`` minutes and on SIGTERM / Ctrl-C, between two generations (the agent's parameters,
solver and Adam state, the observation filter, the counters and the curve); ``--resume DIR`` goes on from it
with new actors (their episodes are not in the checkpoint, so the run is not bit-identical to an uninterrupted
one).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import gymnasium as gym
import numpy as np

from evokit import ESAgent, FilterStateError, MeanStdFilter, SamplingInfo
from evokit.config import config_to_prototxt, parse_prototxt
from parl_core.utils import Checkpointer, CheckpointError, RunLog, add_run_args

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # run as a script: actor.py and policy.py sit beside it (and are shipped to the actors)
    sys.path.insert(0, HERE)
from policy import BACKENDS, make_policy  # noqa: E402

#: PARL's ES config names and this example's defaults (tuned for HalfCheetah with 2 actors; PARL's own are for
#: 24-48 CPUs: min_episodes_per_batch 1000, noise_size 2e8).
DEFAULTS = {
    "env_name": "HalfCheetah-v5",
    "actor_num": 2,
    "action_noise_std": 0.0,
    "eval_prob": 0.0,
    "filter_update_prob": 0.01,
    "stepsize": 0.02,
    "min_episodes_per_batch": 40,
    "min_steps_per_batch": 10_000,
    "noise_size": 25_000_000,
    "noise_stdev": 0.03,
    "l2_coeff": 0.005,
    "max_env_steps": 10_000_000,
    "hidden": [32, 32],
    "backend": "numpy",
    "eval_interval": 200_000,
    "eval_episodes": 5,
    "target_return": None,
}
#: one noise table per machine for every run (runs differ by the actors' offset generators, seeded by --seed)
NOISE_TABLE_SEED = 123
#: distinct offsets the noise table must offer beyond the parameter count
MIN_NOISE_OFFSETS = 10_000


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    known, _ = pre.parse_known_args(argv)
    defaults = dict(DEFAULTS)
    if known.config:
        defaults.update(load_hp_file(known.config))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="TOML or JSON file of the hyper-parameters below (PARL's names)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", default="runs/es_mujoco")
    for name, value in DEFAULTS.items():
        if name == "hidden":
            parser.add_argument("--hidden", type=int, nargs="+", default=defaults["hidden"])
        elif name == "backend":
            parser.add_argument("--backend", choices=BACKENDS, default=defaults["backend"])
        elif name == "target_return":
            parser.add_argument("--target_return", type=float, default=defaults[name],
                                help="stop once an evaluation reaches this mean return")
        else:
            parser.add_argument(f"--{name}", type=type(value), default=defaults[name])
    parser.add_argument("--cpu_num", type=int, default=None,
                        help="CPUs of the embedded local cluster (default: one per core)")
    parser.add_argument("--cluster", "--address", dest="cluster", default=None,
                        help="host:port of a running xparl cluster, or ray / ray://HOST:10001 for a Ray cluster "
                             "(default: an embedded xparl cluster)")
    parser.add_argument("--resource_wait_s", type=float, default=60.0,
                        help="how long creating an actor waits for a free CPU")
    parser.add_argument("--init_model", default=None,
                        help="start from a saved <logdir>/model directory (policy and observation filter)")
    parser.add_argument("--envpool", action="store_true",
                        help="actors step the episodes in EnvPool (matched MuJoCo tasks, e.g. HalfCheetah-v5; "
                             "pip install 'parl-core[envpool]')")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    hp = parser.parse_args(argv)
    if hp.resume is not None:
        hp.logdir = hp.resume
    if hp.envpool:
        from parl_core.env.envpool_atari import INSTALL_HINT, envpool_available
        from parl_core.env.envpool_mujoco import MATCHED_TASKS

        if hp.env_name not in MATCHED_TASKS:
            parser.error(f"--envpool runs the MuJoCo tasks EnvPool matches ({', '.join(sorted(MATCHED_TASKS))}), "
                         f"not {hp.env_name}")
        if not envpool_available():
            parser.error(INSTALL_HINT)
    return hp


def load_hp_file(path: str) -> dict:
    """Read a TOML or JSON hyper-parameter file; unknown names are an error naming the known ones."""
    with open(path, "rb") as f:
        if path.endswith(".json"):
            values = json.load(f)
        else:
            import tomllib

            values = tomllib.load(f)
    unknown = sorted(set(values) - set(DEFAULTS))
    if unknown:
        raise SystemExit(f"{path}: unknown hyper-parameters {unknown}; known: {sorted(DEFAULTS)}")
    return values


def check_env(env_name: str) -> tuple[int, int]:
    """Return ``(obs_dim, act_dim)``; raise SystemExit naming the fix for an unsuitable env."""
    env = gym.make(env_name)
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    if not isinstance(act_space, gym.spaces.Box):
        raise SystemExit(f"{env_name} has a {type(act_space).__name__} action space; this example's policy outputs "
                         "continuous actions (a Box space). Use a continuous-control env (e.g. HalfCheetah-v5, "
                         "Pendulum-v1), or examples/evokit/cartpole_es.py for discrete actions")
    if not isinstance(obs_space, gym.spaces.Box) or len(obs_space.shape) != 1:
        raise SystemExit(f"{env_name} has observations {obs_space}; this example needs a flat Box observation space "
                         "(wrap the env with gymnasium.wrappers.FlattenObservation)")
    return obs_space.shape[0], act_space.shape[0]


def evokit_config(hp: argparse.Namespace, num_params: int):
    """The EvoKit config of PARL's ES hyper-parameters; the noise table must fit the policy."""
    if hp.noise_size < num_params + MIN_NOISE_OFFSETS:
        raise SystemExit(f"--noise_size {hp.noise_size} is too small: the noise table must hold the policy's "
                         f"{num_params} parameters plus at least {MIN_NOISE_OFFSETS} distinct offsets; use "
                         f"--noise_size {max(25_000_000, num_params + MIN_NOISE_OFFSETS)} or more")
    return parse_prototxt(f"""
        solver {{
          type: BASIC_ES
          mirrored_sampling: true
          fitness_shaping: RANK_CENTERED
          l2_coeff: {hp.l2_coeff!r}
          optimizer {{ type: ADAM base_lr: {hp.stepsize!r} }}
          sampling {{ gaussian_sampling {{
            std: {hp.noise_stdev!r} cached: true seed: {NOISE_TABLE_SEED} cache_size: {hp.noise_size} }} }}
        }}
        async_es {{ max_to_keep: 2 }}
    """)


class ActorPool:
    """``actor_num`` remote ``ESActor``s; a dead one is replaced on demand."""

    def __init__(self, hp: argparse.Namespace, config_text: str, made: int = 0) -> None:
        from actor import ESActor

        import parl_remote

        self.errors = (parl_remote.ActorDiedError,)
        self.hp, self.config_text = hp, config_text
        self.hp_dict = {k: getattr(hp, k) for k in ("env_name", "envpool", "hidden", "backend",
                                                     "filter_update_prob", "action_noise_std", "eval_prob", "seed")}
        if hp.cluster:
            parl_remote.connect(hp.cluster, resource_wait_s=hp.resource_wait_s)
        else:
            # the embedded cluster forks its jobs with the actor's heavy imports done once (XPARL_PRELOAD)
            os.environ.setdefault("XPARL_PRELOAD", "gymnasium,mujoco,evokit")
            parl_remote.connect(cpu_num=hp.cpu_num, resource_wait_s=hp.resource_wait_s)
        self.remote_cls = parl_remote.remote_class(wait=False)(ESActor)
        self.next_id = made  # actors made before (a resumed run's actors take seeds not used yet)
        self.replaced = 0
        self.actors = [self._create() for _ in range(hp.actor_num)]

    def _create(self):
        import parl_remote

        self.next_id += 1
        try:
            return self.remote_cls(self.config_text, self.hp_dict, 1000 * self.hp.seed + self.next_id)
        except parl_remote.ResourceError as exc:
            raise SystemExit(f"could not start ES actor {self.next_id}: {exc}\nFix: lower --actor_num, or give the "
                             "cluster more CPUs (--cpu_num for the embedded cluster, or `xparl connect` more "
                             "machines), or wait longer with --resource_wait_s") from None

    def submit(self, state: dict, filter_state: dict, pairs: int, episode_seed: int) -> list:
        """Start one ``sample`` call per actor (they run while the learner does something else)."""
        return [a.sample(state, filter_state, pairs, episode_seed + 100_000 * i) for i, a in enumerate(self.actors)]

    def collect(self, futures: list) -> list[dict]:
        """The results of the live actors; a dead actor's call is dropped and the actor replaced."""
        results = []
        for i, fut in enumerate(futures):
            try:
                results.append(fut.get())
            except self.errors as exc:
                print(f"\nactor {i} died ({exc}); its episodes of this round are dropped, starting a replacement",
                      flush=True)
                self.actors[i] = self._create()
                self.replaced += 1
        return results


def evaluate(agent: ESAgent, obs_filter: MeanStdFilter, env_name: str, episodes: int, seed: int) -> tuple:
    """Mean return of the learner's (unperturbed) policy on filtered observations (statistics not updated)."""
    env = gym.make(env_name)
    low, high = env.action_space.low, env.action_space.high
    returns, steps = [], 0
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        total, done = 0.0, False
        while not done:
            action = agent.predict(obs_filter(obs[None], update=False))[0]
            obs, r, terminated, truncated, _ = env.step(np.clip(action, low, high))
            total += float(r)
            steps += 1
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns)), steps


def main(argv: list[str] | None = None) -> dict:
    hp = parse_args(argv)
    if hp.actor_num < 1:
        raise SystemExit("--actor_num must be >= 1")
    obs_dim, act_dim = check_env(hp.env_name)
    if hp.backend == "torch":
        import torch

        torch.set_num_threads(1)
    agent = ESAgent(make_policy(hp.backend, obs_dim, act_dim, hp.hidden, seed=hp.seed))
    config = evokit_config(hp, agent.num_params)
    obs_filter = MeanStdFilter((obs_dim,))
    if hp.init_model:
        agent.load_inference_model(hp.init_model)
        try:
            with np.load(os.path.join(hp.init_model, "obs_filter.npz")) as saved:
                obs_filter.load_state_dict(dict(saved))
        except (FilterStateError, OSError, ValueError) as exc:
            raise SystemExit(f"--init_model {hp.init_model}: cannot restore the observation filter: {exc}") from None
    agent.load_config(config).init_solver()

    run = RunLog(hp.logdir)
    # where the cluster is and how long to wait for it may change between the parts of a run
    ckpt = Checkpointer(run, every_min=hp.checkpoint_every, resume=hp.resume is not None, config=vars(hp),
                        ignore=("config", "cluster", "cpu_num", "resource_wait_s", "init_model"))
    ckpt.register(agent=agent, obs_filter=obs_filter)
    c = ckpt.track(env_steps=0, episodes=0, generation=0, next_eval=hp.eval_interval, last_eval=[float("nan"), 0],
                   eval_steps=0, sampling_s=0.0, actors_made=0, actors_replaced=0,
                   timers={"env": 0.0, "policy": 0.0, "noise": 0.0, "learner_update": 0.0})
    try:
        ckpt.start()
    except CheckpointError as exc:
        raise SystemExit(f"--resume {hp.resume}: {exc}") from None
    pairs = max(1, math.ceil(hp.min_episodes_per_batch / (2 * hp.actor_num)))
    print(f"{hp.env_name}: policy {[obs_dim, *hp.hidden, act_dim]} ({agent.num_params} parameters, {hp.backend}), "
          f"{hp.actor_num} actors x {2 * pairs} episodes per round; waiting up to {hp.resource_wait_s:g} s for "
          f"{hp.actor_num} free CPUs", flush=True)
    pool = ActorPool(hp, config_to_prototxt(config), made=c.actors_made)

    from tqdm import tqdm

    bar = tqdm(total=hp.max_env_steps, initial=c.env_steps, disable=hp.no_progress, unit="step", mininterval=2.0)
    while c.env_steps < hp.max_env_steps:
        sample_start = time.perf_counter()
        state, filter_state = agent.get_sampling_state(), obs_filter.state_dict()
        batch: list[dict] = []
        evaluation = None
        while (sum(len(r["returns"]) for r in batch) < hp.min_episodes_per_batch
               or sum(int(r["lengths"].sum()) for r in batch) < hp.min_steps_per_batch):
            futures = pool.submit(state, filter_state, pairs, 10**6 * hp.seed + 1000 * c.generation + len(batch))
            if evaluation is None and c.env_steps >= c.next_eval:  # while the actors sample
                evaluation = evaluate(agent, obs_filter, hp.env_name, hp.eval_episodes, 10**7 + c.generation)
            batch += pool.collect(futures)
            with open(os.path.join(hp.logdir, "actor_pids.json"), "w") as f:
                json.dump({"generation": c.generation, "pids": [r["pid"] for r in batch[-hp.actor_num:]]}, f)
        t0 = time.perf_counter()
        infos = [SamplingInfo.from_bytes(b) for r in batch for b in r["infos"]]
        rewards = np.concatenate([r["returns"] for r in batch])
        stats = agent.update(infos, rewards)
        for r in batch:
            obs_filter.apply_increment(r["filter_increment"])
            for k, v in r["timers"].items():
                c.timers[k] += v
        c.timers["learner_update"] += time.perf_counter() - t0
        steps = sum(int(r["lengths"].sum()) for r in batch)
        c.env_steps += steps
        c.episodes += len(rewards)
        c.generation += 1
        c.sampling_s += time.perf_counter() - sample_start
        row = {"reward_mean": float(rewards.mean()), "reward_max": float(rewards.max()),
               "grad_norm": stats["grad_norm"], "episodes_per_s": c.episodes / c.sampling_s,
               "env_steps_per_s": c.env_steps / c.sampling_s}
        actor_evals = np.concatenate([r["eval_returns"] for r in batch])
        if actor_evals.size:
            row["actor_eval_return"] = float(actor_evals.mean())
        if evaluation is not None:
            c.last_eval = list(evaluation)
            c.eval_steps += evaluation[1]
            c.next_eval += hp.eval_interval
            row["eval_return"] = evaluation[0]
        for k, v in row.items():
            run.scalar(f"train/{k}", v, c.env_steps)
        run.row({"env_steps": c.env_steps, "wall_s": f"{run.elapsed():.1f}", "generation": c.generation,
                 "reward_mean": f"{row['reward_mean']:.2f}", "reward_max": f"{row['reward_max']:.2f}",
                 "eval_return": row.get("eval_return", "")})
        c.actors_made, c.actors_replaced = pool.next_id, c.actors_replaced + pool.replaced
        pool.replaced = 0
        bar.update(steps)
        bar.set_postfix(ep_s=f"{row['episodes_per_s']:.1f}", steps_s=f"{row['env_steps_per_s']:.0f}",
                        ret=f"{row['reward_mean']:.0f}", eval=f"{c.last_eval[0]:.0f}")
        if hp.target_return is not None and row.get("eval_return", -math.inf) >= hp.target_return:
            break
        ckpt.maybe_save(c.env_steps)  # between two generations: a SIGTERM / Ctrl-C saves here and exits
    bar.close()
    final_return, steps = evaluate(agent, obs_filter, hp.env_name, hp.eval_episodes, 10**8)
    c.eval_steps += steps
    run.scalar("eval/return", final_return, c.env_steps)
    agent.save_inference_model(os.path.join(hp.logdir, "model"))
    np.savez(os.path.join(hp.logdir, "model", "obs_filter.npz"), **obs_filter.state_dict())
    summary = run.write_summary({
        "env": hp.env_name, "algorithm": "ES (evokit BASIC_ES)", "seed": hp.seed, "actor_num": hp.actor_num,
        "backend": hp.backend, "hidden": hp.hidden, "num_params": agent.num_params, "envpool": hp.envpool,
        "eval_return_mean": final_return, "eval_episodes": hp.eval_episodes, "env_steps": c.env_steps,
        "eval_env_steps": c.eval_steps, "episodes": c.episodes, "generations": c.generation,
        "env_steps_per_s": c.env_steps / c.sampling_s, "episodes_per_s": c.episodes / c.sampling_s,
        "actors_replaced": c.actors_replaced, "actor_cpu_split_s": {k: round(v, 3) for k, v in c.timers.items()},
        "resumed": ckpt.resumed, "wall_s": round(run.elapsed(), 3),
    })
    ckpt.finish(c.env_steps)
    run.close()
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
