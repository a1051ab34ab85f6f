"""MADDPG on the multi-agent particle envs (mpe2) with parl.algorithms.MADDPG and PARL's MAenv.

Algorithm box (Lowe et al. 2017, Algorithm 1, with PARL 2.2.1's benchmark/torch/maddpg recipe):

    one MADDPG per agent i: actor mu_i(o_i), critic Q_i(o_1..o_N, a_1..a_N), target copies mu'_i, Q'_i
    for each env step (25-step episodes; --envs copies of the scenario are stepped side by side):
        a_i = MADDPG_i.sample(o_i)       Gumbel-softmax over a Discrete space, tanh(mean + std * N(0, 1)) for a Box
        step the env; store (o_n, a_n, r_n, o'_n, terminated) in one replay memory of 1e5 joint transitions
        every 100 env steps, once the memory holds more than 25,600 transitions, for each agent i:
            draw 1024 transitions; a'_j = MADDPG_j.sample(o'_j, use_target_model=True) for every agent j
            y = r_i + gamma * (1 - terminated) * Q'_i(o'_n, a'_n)         (marl_functional.maddpg_target_q)
            MADDPG_i.learn(o_n, a_n, y): actor step, critic step, soft target update
        every --eval-every env steps: --eval-episodes greedy episodes (predict: argmax of the softmax, or tanh(mean))

Returns are summed over the agents (PARL's metric). On simple_spread (N=3, local_ratio=0) every agent gets the
same global reward, so the sum is three times the team reward; a uniformly random policy scores about -158.6.
An episode that ends at the 25-step limit is truncated, not terminated: its last step is bootstrapped (as the
paper's code; PARL stored the time limit as a terminal).

Usage::

    python examples/maddpg/train.py --scenario simple_spread --seed 0 --logdir runs/maddpg/spread-seed0
    python examples/maddpg/train.py --scenario simple_spread --continuous-actions --backend paddle

    # killed, pre-empted or stopped with Ctrl-C: continue exactly where the last checkpoint left off
    python examples/maddpg/train.py --scenario simple_spread --seed 0 --resume runs/maddpg/spread-seed0

Writes ``<logdir>/summary.json``, ``<logdir>/curve.csv``, tensorboard scalars, the final weights of each agent
(``<logdir>/model/agent_<i>``, read back by ``--restore <logdir>/model``) and ``<logdir>/checkpoint.npz`` every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end (see docs/long_runs.md): the networks, their
Adam states, the replay memory, the counters and every random generator. An mpe2 world lives in objects a
checkpoint cannot hold, so checkpoints are taken between two episodes (when the 25-step episodes of the envs
stepped side by side have ended), where the next ``reset`` rebuilds each world from its env's generator.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import time

import numpy as np
from tqdm import tqdm

import parl
from parl.env.multiagent_env import MAenv
from parl.utils import Checkpointer, RunLog, add_run_args

ACTOR_LR = 0.01
CRITIC_LR = 0.01
GAMMA = 0.95
TAU = 0.01
BATCH_SIZE = 1024
MEMORY_SIZE = 100_000
LEARNING_STARTS = BATCH_SIZE * 25  # PARL: min_memory_size = batch_size * max_episode_len
UPDATE_EVERY = 100  # env steps between two updates of every agent
MAX_STEP_PER_EPISODE = 25
HIDDEN = 64


@functools.cache
def define_model(backend: str = "torch") -> type:
    """PARL's ``MAModel`` on ``backend`` (``"torch"`` or ``"paddle"``), which it selects (before parl.algorithms)."""
    parl.set_backend(backend)
    nets = importlib.import_module(f"parl_algorithms.{backend}.nets")
    ops = importlib.import_module(f"parl_algorithms.{backend}.ops")
    if backend == "torch":
        import torch

        def xavier_(net):  # PARL's torch weights_init_: Xavier-uniform weights, zero biases
            for layer in net.layers:
                torch.nn.init.xavier_uniform_(layer.weight)
                torch.nn.init.zeros_(layer.bias)
            return net
    else:
        def xavier_(net):  # paddle's Linear is initialised that way already (PARL's paddle MAModel)
            return net

    class MAModel(parl.Model):
        """Actor ``obs -> 64 -> 64 -> act`` (ReLU) and critic ``[all obs, all actions] -> 64 -> 64 -> 1``.

        ``policy(obs)`` -> logits float32 [B, act_dim], or ``(mean, log_std)`` each [B, act_dim] when continuous
        (PARL's separate std head is the second half of the last layer here); ``value(obs_n, act_n)`` -> Q [B, 1].
        """

        def __init__(self, obs_dim: int, act_dim: int, critic_in_dim: int, continuous_actions: bool = False):
            super().__init__()
            self.act_dim = act_dim
            self.continuous_actions = continuous_actions
            self.actor = xavier_(nets.MLP([obs_dim, HIDDEN, HIDDEN, act_dim * (2 if continuous_actions else 1)]))
            self.critic = xavier_(nets.MLP([critic_in_dim, HIDDEN, HIDDEN, 1]))

        def policy(self, obs):
            out = self.actor(obs)
            return (out[:, :self.act_dim], out[:, self.act_dim:]) if self.continuous_actions else out

        def value(self, obs_n, act_n):
            return self.critic(ops.concat(list(obs_n) + list(act_n)))

        def get_actor_params(self):
            return self.actor.parameters()

        def get_critic_params(self):
            return self.critic.parameters()

    return MAModel


class JointReplayMemory:
    """Joint transitions of all agents in numpy arrays: agent i's obs [capacity, obs_dim_i], action
    [capacity, act_dim_i], next obs; rewards [capacity, n_agents]; terminated [capacity]."""

    def __init__(self, capacity: int, obs_dims: list[int], act_dims: list[int]):
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.obs = [np.zeros((capacity, d), np.float32) for d in obs_dims]
        self.next_obs = [np.zeros((capacity, d), np.float32) for d in obs_dims]
        self.act = [np.zeros((capacity, d), np.float32) for d in act_dims]
        self.reward = np.zeros((capacity, len(obs_dims)), np.float32)
        self.terminated = np.zeros(capacity, np.float32)

    def extend(self, obs_n, act_n, reward, next_obs_n, terminated) -> None:
        """Append E transitions: lists over agents of [E, dim] arrays, reward [E, n_agents], terminated [E]."""
        rows = (self.pos + np.arange(len(reward))) % self.capacity
        for store, values in ((self.obs, obs_n), (self.act, act_n), (self.next_obs, next_obs_n)):
            for array, value in zip(store, values, strict=True):
                array[rows] = value
        self.reward[rows] = reward
        self.terminated[rows] = terminated
        self.pos = int(rows[-1] + 1) % self.capacity
        self.size = min(self.size + len(reward), self.capacity)

    def state_dict(self) -> dict:
        """The stored transitions (the first ``size`` rows of every array), ``pos`` and ``size``."""
        n = self.size
        return {"obs": [a[:n] for a in self.obs], "act": [a[:n] for a in self.act],
                "next_obs": [a[:n] for a in self.next_obs], "reward": self.reward[:n],
                "terminated": self.terminated[:n], "pos": self.pos, "size": n}

    def load_state_dict(self, state: dict) -> None:
        """Put back what :meth:`state_dict` returned (ValueError: another scenario's shapes)."""
        n = int(state["size"])
        for name in ("obs", "act", "next_obs"):
            for array, saved in zip(getattr(self, name), state[name], strict=True):
                array[:n] = saved
        self.reward[:n], self.terminated[:n] = state["reward"], state["terminated"]
        self.pos, self.size = int(state["pos"]), n


class EnvGenerators:
    """The random generators of MPE envs, for a checkpoint between two episodes: mpe2 draws each episode's start
    (positions, goals) from its env's ``np_random`` in ``reset``; the rest of an mpe2 world lives in objects a
    checkpoint cannot hold, and the next ``reset`` rebuilds it."""

    def __init__(self, envs: list[MAenv]):
        self.envs = envs

    def state_dict(self) -> dict:
        return {"np_random": [env.env.unwrapped.np_random.bit_generator.state for env in self.envs]}

    def load_state_dict(self, state: dict) -> None:
        for env, saved in zip(self.envs, state["np_random"], strict=True):  # (ValueError: another --envs)
            env.env.unwrapped.np_random.bit_generator.state = saved


def update(algs, memory, rng, ops, functional) -> float:
    """One MADDPG update of every agent (PARL's MAAgent.learn, each agent on its own batch); mean critic loss."""
    losses = []
    for i, alg in enumerate(algs):
        idx = rng.integers(0, memory.size, BATCH_SIZE)
        obs_n = [ops.tensor(o[idx]) for o in memory.obs]
        act_n = [ops.tensor(a[idx]) for a in memory.act]
        with ops.no_grad():
            next_obs_n = [ops.tensor(o[idx]) for o in memory.next_obs]
            next_act_n = [other.sample(o, use_target_model=True) for other, o in zip(algs, next_obs_n, strict=True)]
            next_q = alg.Q(next_obs_n, next_act_n, use_target_model=True)
            target_q = functional.maddpg_target_q(ops.tensor(memory.reward[idx, i]), next_q,
                                                  ops.tensor(memory.terminated[idx]), GAMMA)
        losses.append(float(alg.learn(obs_n, act_n, target_q)))
    return float(np.mean(losses))


def act(algs, obs_n, ops, explore: bool) -> list[np.ndarray]:
    """Every agent's actions for E envs at once: obs_n is a list over agents of [E, obs_dim_i]."""
    with ops.no_grad():
        return [ops.to_numpy(alg.sample(ops.tensor(o)) if explore else alg.predict(ops.tensor(o)))
                for alg, o in zip(algs, obs_n, strict=True)]


def by_agent(obs_per_env: list[list[np.ndarray]]) -> list[np.ndarray]:
    """[env][agent] observations -> list over agents of [E, obs_dim_i]."""
    return [np.stack(column) for column in zip(*obs_per_env, strict=True)]


def evaluate(algs, envs: list[MAenv], episodes: int, ops) -> np.ndarray:
    """Summed-over-agents returns of ``episodes`` greedy episodes (episode k seeded 10_000 + k), float64 [episodes]."""
    returns = []
    for start in range(0, episodes, len(envs)):
        batch = envs[:min(len(envs), episodes - start)]
        obs = [env.reset(seed=10_000 + start + e) for e, env in enumerate(batch)]
        total = np.zeros(len(batch))
        for _ in range(MAX_STEP_PER_EPISODE):
            actions = act(algs, by_agent(obs), ops, explore=False)
            for e, env in enumerate(batch):
                obs[e], reward_n, _, _ = env.step([a[e] for a in actions])
                total[e] += sum(reward_n)
        returns.extend(total)
    return np.asarray(returns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="simple_spread", help="PARL's MPE scenario name (MAenv)")
    parser.add_argument("--continuous-actions", action="store_true", help="Box actions (a squashed Gaussian)")
    parser.add_argument("--backend", choices=("torch", "paddle"), default="torch", help="deep-learning framework")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (paddle: cpu, gpu)  [default: the backend's]")
    parser.add_argument("--logdir", default=None, help="default: runs/maddpg/<scenario>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=625_000,
                        help="env steps (every agent acts once); PARL's budget is 25,000 episodes = 625,000")
    parser.add_argument("--envs", type=int, default=4,
                        help="scenario copies stepped side by side (one policy call per agent for all of them)")
    parser.add_argument("--learning-starts", type=int, default=LEARNING_STARTS)
    parser.add_argument("--update-every", type=int, default=UPDATE_EVERY)
    parser.add_argument("--eval-every", type=int, default=25_000, help="env steps (PARL: every 1,000 episodes)")
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--final-eval-episodes", type=int, default=100)
    parser.add_argument("--target-return", type=float, default=None, help="stop once an evaluation reaches it")
    parser.add_argument("--restore", default=None, help="a weights directory (<logdir>/model) to start from")
    parser.add_argument("--no-progress", action="store_true")
    add_run_args(parser)
    args = parser.parse_args()
    if args.total_steps % args.envs:
        parser.error("--total-steps must be a multiple of --envs")
    logdir = args.resume or args.logdir or os.path.join("runs", "maddpg", f"{args.scenario}-seed{args.seed}")
    run = RunLog(logdir)
    ops = importlib.import_module(f"parl_algorithms.{args.backend}.ops")
    functional = importlib.import_module(f"parl_algorithms.{args.backend}.marl_functional")
    ops.seed(args.seed)  # (torch: one CPU thread, 2-4x faster for these small networks)
    rng = np.random.default_rng(args.seed)
    load_start = os.getloadavg()[0]  # the 1-minute load average of this shared machine (wall-clock context)

    envs = [MAenv(args.scenario, args.continuous_actions) for _ in range(args.envs)]
    eval_envs = [MAenv(args.scenario, args.continuous_actions) for _ in range(min(10, args.final_eval_episodes))]
    env = envs[0]
    critic_in_dim = sum(env.obs_shape_n) + sum(env.act_shape_n)
    model_cls = define_model(args.backend)  # selects the backend first
    algs = [parl.algorithms.MADDPG(model_cls(env.obs_shape_n[i], env.act_shape_n[i], critic_in_dim,
                                             args.continuous_actions),
                                   agent_index=i, act_space=env.action_space, gamma=GAMMA, tau=TAU,
                                   actor_lr=ACTOR_LR, critic_lr=CRITIC_LR, device=args.device)
            for i in range(env.n)]
    agents = [parl.Agent(alg) for alg in algs]
    if args.restore:
        for i, agent in enumerate(agents):
            agent.restore(os.path.join(args.restore, f"agent_{i}"))
    memory = JointReplayMemory(MEMORY_SIZE, env.obs_shape_n, env.act_shape_n)

    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args))
    ckpt.register(memory=memory, rng=rng, envs=EnvGenerators(envs), **{f"agent{i}": alg for i, alg in enumerate(algs)})
    # ep_len 0: the env starts an episode at the next step (the evaluation envs are seeded anew each time)
    c = ckpt.track(step=0, ep_return=np.zeros(args.envs), ep_len=np.zeros(args.envs, np.int64), train_returns=[],
                   eval_returns=np.array([np.nan]), reached=False, updates=0, critic_loss=float("nan"))
    ckpt.start()  # (a resumed run continues from its checkpoint: counters, memory, networks, Adam, generators)
    obs = [None] * args.envs
    bar = tqdm(total=args.total_steps, initial=c.step, disable=args.no_progress, unit="step", mininterval=2.0)
    while c.step < args.total_steps and not c.reached:
        for k in np.flatnonzero(c.ep_len == 0):  # a new episode: seeded at the run's start, then each env's stream
            obs[k] = envs[k].reset(seed=args.seed * 1_000 + k if c.step == 0 else None)
        obs_n = by_agent(obs)
        act_n = act(algs, obs_n, ops, explore=True)
        next_obs, rewards, terminated = [], np.zeros((args.envs, env.n), np.float32), np.zeros(args.envs, bool)
        for k, e in enumerate(envs):
            o, reward_n, done_n, _ = e.step([a[k] for a in act_n])
            rewards[k] = reward_n
            next_obs.append(o)
            c.ep_len[k] += 1
            c.ep_return[k] += sum(reward_n)
            # mpe2 ends every episode at 25 steps (a truncation): only an earlier end is a termination
            terminated[k] = all(done_n) and c.ep_len[k] < MAX_STEP_PER_EPISODE
            if all(done_n) or c.ep_len[k] >= MAX_STEP_PER_EPISODE:
                c.train_returns = (c.train_returns + [float(c.ep_return[k])])[-100:]
                run.scalar("train/episode_return", c.ep_return[k], c.step + k + 1)
                c.ep_return[k], c.ep_len[k] = 0.0, 0  # (reset at the next step)
        memory.extend(obs_n, act_n, rewards, by_agent(next_obs), terminated)
        obs = next_obs
        for _ in range(args.envs):  # PARL's per-step learn() call, which updates every --update-every env steps
            c.step += 1
            if c.step % args.update_every == 0 and memory.size > args.learning_starts:
                c.critic_loss = update(algs, memory, rng, ops, functional)
                c.updates += 1
        bar.update(args.envs)
        if c.step % args.eval_every < args.envs or c.step >= args.total_steps:
            c.eval_returns = evaluate(algs, eval_envs, args.eval_episodes if c.step < args.total_steps
                                      else args.final_eval_episodes, ops)
            wall = run.elapsed()
            recent = float(np.mean(c.train_returns)) if c.train_returns else float("nan")
            run.row({"env_steps": c.step, "wall_s": round(wall, 2),
                     "eval_return_mean": round(float(c.eval_returns.mean()), 3),
                     "eval_return_std": round(float(c.eval_returns.std()), 3), "train_return_mean": round(recent, 3),
                     "steps_per_s": round(c.step / wall, 1)})
            run.scalar("eval/return_mean", float(c.eval_returns.mean()), c.step)
            if c.updates:  # no loss before the first update (tensorboard warns on NaN)
                run.scalar("train/critic_loss", c.critic_loss, c.step)
            for key, value in algs[0].last_info.items():
                run.scalar(f"agent0/{key}", value, c.step)
            bar.set_postfix(eval=f"{c.eval_returns.mean():.1f}", train=f"{recent:.1f}")
            c.reached = args.target_return is not None and bool(c.eval_returns.mean() >= args.target_return)
        if not c.ep_len.any():  # every env between two episodes: the only point an mpe2 world can be rebuilt
            ckpt.maybe_save(c.step)
    bar.close()
    eval_returns = c.eval_returns
    if c.step < args.total_steps or len(eval_returns) != args.final_eval_episodes:  # stopped early: a final evaluation
        eval_returns = evaluate(algs, eval_envs, args.final_eval_episodes, ops)
    os.makedirs(os.path.join(logdir, "model"), exist_ok=True)
    for i, agent in enumerate(agents):
        agent.save(os.path.join(logdir, "model", f"agent_{i}"))
    run.close()
    wall = run.elapsed()
    result = run.write_summary({
        "algorithm": "MADDPG", "backend": args.backend, "device": str(algs[0].device), "scenario": args.scenario,
        "env_id": f"mpe2:{env.env.metadata['name']}", "env_version": env.env_version,
        "continuous_actions": args.continuous_actions,
        "n_agents": env.n, "seed": args.seed, "envs": args.envs,
        "eval_return_mean": float(eval_returns.mean()), "eval_return_std": float(eval_returns.std()),
        "eval_episodes": int(len(eval_returns)),
        "reward_unit": f"episode return summed over the {env.n} agents (PARL's metric); rewards: {env.reward_unit}",
        "env_steps": c.step, "updates_per_agent": c.updates, "wall_s": round(wall, 3),
        "steps_per_s": round(c.step / wall, 1), "cpu_s": round(time.process_time(), 1),
        "loadavg": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "target_return": args.target_return, "reached": c.reached,
    })
    ckpt.finish(c.step)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
