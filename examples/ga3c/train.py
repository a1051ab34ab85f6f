"""GA3C with remote actors on the cluster (PARL's benchmark/fluid/GA3C), parl.algorithms.A3C's loss.

Algorithm box (Babaeizadeh et al. 2017, "Reinforcement Learning through Asynchronous Advantage Actor-Critic
on a GPU"): the policy lives only in the learner; actors hold environments and ask it for actions.

    actors (``@parl.remote_class``, one process each) own E envs and no network;
        step(actions [E]) -> (obs [E, ...], rewards, terminated, truncated, returns of finished episodes)
    learner (this process), threads around two queues:
        one agent thread per actor: put (id, obs [E, ...]) on the PREDICTION queue, wait for its actions,
            call actor.step(actions); every T + 1 predictions, GAE advantages and value targets of the T steps
            (values from the predictor; the last one bootstraps) go on the TRAINING queue
        predictor thread: takes every request waiting on the prediction queue, one batched A3C.sample on
            them all, answers each agent thread
        trainer (the main thread): takes unrolls from the training queue until it has --train-batch
            transitions, one A3C.learn; the predictor already uses the new weights for the next request (no
            weight copies: the policy lag of GA3C is the few steps an unroll spans)
        a dead actor (ActorDiedError in its agent thread) is logged with its cause and replaced by that
        thread (parl_remote.ActorPool.call); its unfinished unroll is dropped, every other thread goes on
        CartPole: once the training return is near the target, evaluate 10 greedy episodes; stop at the target

The actors ask for actions once per step of E envs (one round trip serves E env steps) and the predictor
batches the requests of all actors; the README measures what the round trip costs.

Usage::

    python examples/ga3c/train.py --actors 2 --seed 0                     # embedded local cluster
    xparl start --port 8010 --cpu-num 4 && python examples/ga3c/train.py --address localhost:8010
    python examples/ga3c/train.py --env PongNoFrameskip-v4 --actors 8      # Atari (PARL's config, 42x42)
    python examples/ga3c/train.py --actors 2 --seed 0 --resume runs/ga3c/CartPole-v1-seed0   # after a kill

Writes ``<logdir>/summary.json`` (eval_return_mean, eval_episodes, env_steps, wall_s, reached, ...),
``<logdir>/curve.csv`` (``env_steps``, ``wall_s``, ``episode_return``: a row per finished training episode, at
the env steps of the update after it; on Atari a whole game, unclipped) and tensorboard scalars (``train/*``,
``eval/return_mean``, ``time/*``).

Long runs (``parl.utils`` run harness, docs/long_runs.md): a checkpoint (``<logdir>/checkpoint.npz``: the
learner's network and optimizer, counters, recent returns, RNGs, the curve's length and the clock) every
``--checkpoint-every`` minutes, on SIGTERM / Ctrl-C and at the end, between two updates; ``--resume DIR`` goes on
from it. The actors' games and the unrolls not yet learned from are not in it: a resumed run's actors start new
games. Sampling is asynchronous (which actor's unroll the trainer takes first depends on timing), so a resumed
run, like two uninterrupted runs of one seed, is not bit-exact.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import threading
import time
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from tqdm import tqdm

import parl
from parl.algorithms.torch import A3C  # torch, explicitly: an actor process does not inherit set_backend
from parl.env import is_minatar, make_minatar
from parl.utils import Checkpointer, CheckpointError, RunLog, add_run_args, compute_gae, logger
from parl_algorithms.torch.nets import MLP, paddle_conv_init_
from parl_core.torch import Model  # (with paddle installed, PARL's default backend is paddle)
from parl_remote import ActorDiedError, ActorPool

# Per-env defaults. "vector" (CartPole and other small envs): tuned here. "atari": PARL's ga3c_config.py
# (42x42 frames, t_max 5, train batch 128, lr 5e-4, GAE lambda 1, summed loss, gradient norm 40).
CONFIGS = {
    "vector": dict(envs_per_actor=8, unroll_length=16, train_batch=256, lr=3e-3, gamma=0.99, gae_lambda=0.95,
                   vf_loss_coeff=0.5, entropy_coeff=-0.01, reduction="mean", max_grad_norm=0.5, hidden=64,
                   total_steps=1_000_000, target_return=475.0, eval_trigger=400.0),
    "atari": dict(envs_per_actor=4, unroll_length=5, train_batch=128, lr=5e-4, gamma=0.99, gae_lambda=1.0,
                  vf_loss_coeff=0.5, entropy_coeff=-0.01, reduction="sum", max_grad_norm=40.0, dim=42,
                  total_steps=10_000_000, target_return=18.0, eval_trigger=float("inf")),
}
EVAL_EPISODES = 10


def is_atari(env_id: str) -> bool:
    return "NoFrameskip" in env_id or env_id.startswith("ALE/")


def make_envs(env_id: str, num_envs: int, cfg: dict) -> gym.vector.VectorEnv:
    """E envs stepped together; a finished env resets on the NEXT step (gymnasium's default autoreset).

    Atari ids get DeepMind's preprocessing (``parl.env.atari_wrappers.wrap_deepmind``, imported only here);
    the other envs use their native vector env where they have one.
    """
    if is_atari(env_id):
        import ale_py

        from parl.env.atari_wrappers import wrap_deepmind

        gym.register_envs(ale_py)
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                            wrappers=[lambda env: wrap_deepmind(env, dim=cfg["dim"], obs_format="NCHW")])
    if is_minatar(env_id):  # flat float32 observations [10 * 10 * C] (parl.env.make_minatar)
        return gym.vector.SyncVectorEnv([lambda: make_minatar(env_id) for _ in range(num_envs)])
    mode = "vector_entry_point" if gym.spec(env_id).vector_entry_point else "sync"
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)


class MLPModel(Model):
    """Separate actor and critic tanh MLPs for obs float32 [B, obs_dim] (orthogonal init, as SB3):
    ``policy`` -> logits [B, A], ``value`` -> [B, 1]."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int):
        super().__init__()
        self.actor = MLP([obs_dim, hidden, hidden, num_actions], activation="tanh")
        self.critic = MLP([obs_dim, hidden, hidden, 1], activation="tanh")
        for net, out_gain in ((self.actor, 0.01), (self.critic, 1.0)):
            for i, layer in enumerate(net.layers):
                nn.init.orthogonal_(layer.weight, gain=out_gain if i == len(net.layers) - 1 else np.sqrt(2))
                nn.init.zeros_(layer.bias)

    def policy(self, obs):
        return self.actor(obs)

    def value(self, obs):
        return self.critic(obs)


class AtariModel(Model):
    """PARL's GA3C Atari network (3 convolutions, 512 units, two heads) for frames [B, 4, 42, 42], 0..255."""

    def __init__(self, num_actions: int, dim: int):
        super().__init__()
        # convolutions initialised as paddle initialises PARL's model (torch's default draws smaller weights)
        self.torso = paddle_conv_init_(nn.Sequential(nn.Conv2d(4, 32, 8, stride=4, padding=1), nn.ReLU(),
                                                     nn.Conv2d(32, 64, 4, stride=2, padding=2), nn.ReLU(),
                                                     nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten()))
        with torch.no_grad():
            flat = self.torso(torch.zeros(1, 4, dim, dim)).shape[1]
        self.fc = nn.Sequential(nn.Linear(flat, 512), nn.ReLU())
        self.heads = nn.Linear(512, num_actions + 1)  # logits and value in one matrix product

    def policy_and_value(self, obs):
        """(logits float32 [B, A], value float32 [B, 1]) with one pass of the torso."""
        out = self.heads(self.fc(self.torso(obs / 255.0)))
        return out[:, :-1], out[:, -1:]

    def policy(self, obs):
        return self.policy_and_value(obs)[0]

    def value(self, obs):
        return self.policy_and_value(obs)[1]


@parl.remote_class
class Actor:
    """E environments in a process of their own, no network: the learner chooses every action."""

    def __init__(self, env_id: str, num_envs: int, cfg: dict, seed: int):
        self.envs = make_envs(env_id, num_envs, cfg)
        self.atari = is_atari(env_id)
        self.obs, _ = self.envs.reset(seed=seed)
        self.ep_return = np.zeros(num_envs)

    def pid(self) -> int:
        """This actor's process id (the fault test kills it)."""
        return os.getpid()

    def spaces(self) -> tuple[gym.Space, gym.Space]:
        """(single observation space, single action space)."""
        return self.envs.single_observation_space, self.envs.single_action_space

    def reset_obs(self) -> np.ndarray:
        """The observations [E, *obs_shape] the first actions are asked for."""
        return self.obs

    def step(self, actions: np.ndarray) -> tuple:
        """Step every env once.

        Args:
            actions: int64 [E].

        Returns:
            ``(obs [E, *obs_shape], rewards float32 [E], terminated bool [E], truncated bool [E],
            episode_returns list[float], env_s float)``: an env that ended returns its final observation and
            resets on the next step (which ignores its action and returns reward 0); ``env_s`` is the time
            the E env steps took in this process (the rest of the call's round trip is transport).
        """
        began = time.perf_counter()
        obs, rewards, terminated, truncated, _ = self.envs.step(actions)
        env_s = time.perf_counter() - began
        done = terminated | truncated
        self.ep_return += rewards
        returns: list[float] = []
        if done.any():
            if self.atari:  # whole games, unclipped, from PARL's MonitorEnv inside wrap_deepmind
                from parl.env.atari_wrappers import MonitorEnv, get_wrapper_by_cls

                returns = [r for env in self.envs.envs for r, _ in
                           get_wrapper_by_cls(env, MonitorEnv).next_episode_results()]
            else:
                returns = self.ep_return[done].tolist()
            self.ep_return[done] = 0.0
        return obs, rewards.astype(np.float32), terminated, truncated, returns, env_s


class Learner:
    """The policy, the prediction and training queues, and the threads that serve them.

    Args:
        args: the command line.
        cfg: the env's settings (``CONFIGS`` with the flags applied).
        alg: the A3C whose model the predictor serves and the trainer updates.
        c: the run's counters (``Checkpointer.track``): ``env_steps``, ``updates``, ``recent`` (the last 20
            training returns), ``generation`` (actors each slot has had), ``actors_replaced``, the predictor's
            ``predictions`` and ``predict_batches``, the agent threads' ``step_calls``, ``step_call_s``,
            ``step_env_s`` and ``predict_wait_s``.
    """

    def __init__(self, args: argparse.Namespace, cfg: dict, alg: A3C, c: SimpleNamespace) -> None:
        self.args, self.cfg, self.alg, self.c = args, cfg, alg, c
        self.prediction_queue: queue.Queue = queue.Queue()
        self.training_queue: queue.Queue = queue.Queue(maxsize=4 * args.actors)  # bounds the policy lag
        self.answers = [queue.Queue(maxsize=1) for _ in range(args.actors)]
        self.stop = threading.Event()
        self.lock = threading.Lock()  # the counters and `finished`
        self.finished: list[float] = []  # returns of the episodes ended since the trainer last took them
        self.actors: ActorPool | None = None  # start()
        self.threads: list[threading.Thread] = []
        self.replaced_before = c.actors_replaced  # by the earlier parts of a resumed run
        self.error: BaseException | None = None  # what stopped a thread, re-raised by main()

    def guarded(self, target, *args) -> None:
        """Runs a thread's loop; an exception stops the whole learner (and is re-raised by main) instead of
        leaving the other threads waiting forever."""
        try:
            target(*args)
        except BaseException as err:  # noqa: BLE001 (handed to the main thread)
            logger.exception("%s stopped the learner", threading.current_thread().name)
            self.error = err
            self.stop.set()

    def get(self, q: queue.Queue) -> object | None:
        """``q.get()`` that gives up (None) once the learner stops."""
        while not self.stop.is_set():
            try:
                return q.get(timeout=0.5)
            except queue.Empty:
                continue
        return None

    # -- actors and threads ------------------------------------------------------------------------
    def new_actor(self, ident: int) -> Actor:
        seed = self.args.seed * 100_000 + ident * 1000 + self.c.generation[ident] * 100
        actor = Actor(self.args.env, self.cfg["envs_per_actor"], self.cfg, seed)
        self.c.generation[ident] += 1
        logger.info("actor %d started, pid=%d", ident, actor.pid())
        return actor

    def start(self) -> None:
        """Starts the actors (in parallel; each agent thread replaces its own when it dies: the pool logs it and
        raises ActorDiedError in that thread, whose unfinished unroll is dropped), the predictor and the agents."""
        self.actors = ActorPool(self.new_actor, self.args.actors, on_death="report", logger=logger)
        self.threads = [threading.Thread(target=self.guarded, args=(self.run_predictor,), name="predictor",
                                         daemon=True)]
        self.threads += [threading.Thread(target=self.guarded, args=(self.run_agent, i), name=f"agent-{i}",
                                          daemon=True) for i in range(self.args.actors)]
        for thread in self.threads:
            thread.start()

    @property
    def replaced(self) -> int:
        """Actors replaced in the whole run (the earlier parts of a resumed run included)."""
        return self.replaced_before + (self.actors.replacements if self.actors is not None else 0)

    def shutdown(self) -> None:
        """Stops the predictor and agent threads (an agent waits for its actor's step at most 10 s)."""
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=10)

    def run_agent(self, ident: int) -> None:
        """Drives one remote actor: asks the predictor for actions, steps the actor, queues finished unrolls."""
        T, E, c = self.cfg["unroll_length"], self.cfg["envs_per_actor"], self.c
        actors = self.actors
        obs = actors.call(ident, "reset_obs")
        buf = dict(obs=np.empty((T + 1, *obs.shape), obs.dtype), actions=np.empty((T + 1, E), np.int64),
                   values=np.empty((T + 1, E), np.float32), valid=np.empty((T + 1, E), bool),
                   rewards=np.empty((T, E), np.float32), terminated=np.empty((T, E), bool),
                   truncated=np.empty((T, E), bool))
        prev_done, t = np.zeros(E, bool), 0
        while not self.stop.is_set():
            asked = time.perf_counter()
            self.prediction_queue.put((ident, obs))
            answer = self.get(self.answers[ident])
            if answer is None:
                return
            actions, values = answer
            answered = time.perf_counter()
            buf["obs"][t], buf["actions"][t], buf["values"][t], buf["valid"][t] = obs, actions, values, ~prev_done
            if t == T:  # T steps and the value of the state after them: an unroll
                self.enqueue_unroll(buf)
                for key in ("obs", "actions", "values", "valid"):  # the last prediction starts the next unroll
                    buf[key][0] = buf[key][T]
                t = 0
            try:
                stepped = time.perf_counter()
                obs, rewards, terminated, truncated, returns, env_s = actors.call(ident, "step", actions)
            except ActorDiedError:  # logged and replaced by the pool; the unfinished unroll is dropped
                obs, prev_done, t = actors.call(ident, "reset_obs"), np.zeros(E, bool), 0
                continue
            buf["rewards"][t], buf["terminated"][t], buf["truncated"][t] = rewards, terminated, truncated
            prev_done = terminated | truncated
            t += 1
            with self.lock:
                self.finished += returns
                c.step_calls += 1
                c.step_call_s += time.perf_counter() - stepped
                c.step_env_s += env_s
                c.predict_wait_s += answered - asked

    def enqueue_unroll(self, buf: dict) -> None:
        T = self.cfg["unroll_length"]
        advantages, target_values = compute_gae(buf["rewards"], buf["values"][:T], buf["values"][1:],
                                                buf["terminated"], buf["truncated"], gamma=self.cfg["gamma"],
                                                gae_lambda=self.cfg["gae_lambda"])
        valid = buf["valid"][:T].reshape(-1)  # False on the step where a finished env resets
        flat = lambda x: x[:T].reshape(-1, *x.shape[2:])[valid]  # noqa: E731
        unroll = dict(obs=flat(buf["obs"]), actions=flat(buf["actions"]), advantages=flat(advantages),
                      target_values=flat(target_values), env_steps=buf["rewards"].size)
        while not self.stop.is_set():
            try:
                self.training_queue.put(unroll, timeout=0.5)
                return
            except queue.Full:
                continue

    # -- predictor ---------------------------------------------------------------------------------
    def run_predictor(self) -> None:
        """Answers every waiting request with one batched forward pass of the current policy."""
        while not self.stop.is_set():
            first = self.get(self.prediction_queue)
            if first is None:
                return
            requests = [first]
            while True:
                try:
                    requests.append(self.prediction_queue.get_nowait())
                except queue.Empty:
                    break
            obs = np.concatenate([o for _, o in requests])
            with torch.inference_mode():
                actions, values = self.alg.sample(torch.as_tensor(obs, dtype=torch.float32))
            actions, values = actions.cpu().numpy(), values.cpu().numpy()
            start = 0
            for ident, o in requests:
                self.answers[ident].put((actions[start:start + len(o)], values[start:start + len(o)]))
                start += len(o)
            self.c.predictions += len(requests)
            self.c.predict_batches += 1

    # -- trainer -----------------------------------------------------------------------------------
    def next_batch(self) -> tuple[dict, int] | None:
        """Unrolls from the training queue until they hold --train-batch transitions (None when stopping)."""
        unrolls, size = [], 0
        while size < self.cfg["train_batch"]:
            unroll = self.get(self.training_queue)
            if unroll is None:
                return None
            unrolls.append(unroll)
            size += len(unroll["actions"])
        batch = {key: np.concatenate([u[key] for u in unrolls]) for key in ("obs", "actions", "advantages",
                                                                            "target_values")}
        return batch, sum(u["env_steps"] for u in unrolls)


def evaluate(alg: A3C, env_id: str, cfg: dict, seed: int) -> float:
    """Mean return of EVAL_EPISODES greedy episodes played in parallel (the first episode of each env)."""
    envs = make_envs(env_id, EVAL_EPISODES, cfg)
    obs, _ = envs.reset(seed=seed + 10_000)
    returns, done = np.zeros(EVAL_EPISODES), np.zeros(EVAL_EPISODES, bool)
    while not done.all():
        with torch.inference_mode():
            actions = alg.predict(torch.as_tensor(obs, dtype=torch.float32)).cpu().numpy()
        obs, reward, terminated, truncated, _ = envs.step(actions)
        returns += reward * ~done
        done |= terminated | truncated
    envs.close()
    return float(returns.mean())


def train(learner: Learner, run: RunLog, ckpt: Checkpointer, bar: tqdm) -> None:
    """The trainer loop (the main thread): learn from batches until the budget or the target is reached.

    After each update (between two updates: the learner is consistent) ``ckpt.maybe_save`` writes a checkpoint
    when one is due, or on SIGTERM / Ctrl-C, and then raises ``SystemExit``.
    """
    alg, cfg, args, c = learner.alg, learner.cfg, learner.args, learner.c
    while c.env_steps < cfg["total_steps"] and not c.reached:
        item = learner.next_batch()
        if item is None:
            return
        batch, steps = item
        alg.learn(torch.as_tensor(batch["obs"], dtype=torch.float32), torch.from_numpy(batch["actions"]),
                  torch.from_numpy(batch["advantages"]), torch.from_numpy(batch["target_values"]), cfg["lr"],
                  cfg["entropy_coeff"])
        with learner.lock:
            c.updates += 1
            c.env_steps += steps
            returns, learner.finished = learner.finished, []
        wall_s = run.elapsed()
        for ret in returns:
            run.row({"env_steps": c.env_steps, "wall_s": round(wall_s, 3), "episode_return": ret})
        c.recent = (c.recent + returns)[-20:]
        mean_return = float(np.mean(c.recent)) if c.recent else 0.0
        bar.update(steps)
        bar.set_postfix(fps=f"{c.env_steps / wall_s:.0f}", ret=f"{mean_return:.1f}", refresh=False)
        if c.updates % 10 == 0:
            for key, value in alg.get_info().items():
                run.scalar(key, value, c.env_steps)
            run.scalar("train/episode_return", mean_return, c.env_steps)
            run.scalar("time/env_steps_per_s", c.env_steps / wall_s, c.env_steps)
            run.scalar("time/predict_batch_requests", c.predictions / max(c.predict_batches, 1), c.env_steps)
        if c.updates % 25 == 0:
            logger.info("update %d, env steps %d, %.0f frames/s, training return %.1f", c.updates, c.env_steps,
                        c.env_steps / wall_s, mean_return)
        if len(c.recent) >= 10 and mean_return >= cfg["eval_trigger"] and c.updates % 5 == 0:
            c.eval_mean = evaluate(alg, args.env, cfg, args.seed)
            run.scalar("eval/return_mean", c.eval_mean, c.env_steps)
            c.reached = c.eval_mean >= cfg["target_return"]
        with learner.lock:  # (the agent threads' counters hold still while they are saved)
            c.actors_replaced = learner.replaced
            ckpt.maybe_save(c.env_steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--actors", type=int, default=2, help="number of remote actors (processes)")
    parser.add_argument("--address", default=None,
                        help="HOST:PORT of an xparl cluster, or ray / ray://HOST:10001 for a Ray cluster "
                             "(default: an embedded xparl cluster)")
    parser.add_argument("--envs-per-actor", type=int, default=None, help="E (default per env)")
    parser.add_argument("--unroll-length", type=int, default=None, help="T, steps per unroll (default per env)")
    parser.add_argument("--train-batch", type=int, default=None, help="transitions per learn (default per env)")
    parser.add_argument("--lr", type=float, default=None, help="learning rate (default per env)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None,
                        help="torch device of the learner: cpu, cuda, cuda:1  [default: cuda when available]")
    parser.add_argument("--logdir", default=None, help="default: runs/ga3c/<env>-seed<seed>")
    parser.add_argument("--total-steps", type=int, default=None, help="env-step budget (default per env)")
    parser.add_argument("--target-return", type=float, default=None, help="stop once eval reaches it")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_run_args(parser)
    args = parser.parse_args()
    if args.actors < 1:
        parser.error("--actors must be >= 1")
    cfg = dict(CONFIGS["atari" if is_atari(args.env) else "vector"])
    if is_minatar(args.env):  # MinAtar games: the small-env settings, no return target (scores differ per game)
        cfg.update(total_steps=5_000_000, target_return=float("inf"), eval_trigger=float("inf"))
    for key in ("envs_per_actor", "unroll_length", "train_batch", "lr", "total_steps", "target_return"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    logdir = args.resume or args.logdir or os.path.join("runs", "ga3c", f"{args.env.replace('/', '_')}-seed{args.seed}")
    t0 = time.perf_counter()
    run = RunLog(logdir)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    probe = make_envs(args.env, 1, cfg)
    space = probe.single_action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise SystemExit(f"GA3C here needs a Discrete action space; {args.env} has {space}")
    model = AtariModel(int(space.n), cfg["dim"]) if "dim" in cfg else \
        MLPModel(probe.single_observation_space.shape[0], int(space.n), cfg["hidden"])
    probe.close()
    alg = A3C(model, vf_loss_coeff=cfg["vf_loss_coeff"], max_grad_norm=cfg["max_grad_norm"],
              reduction=cfg["reduction"], device=args.device)
    ckpt = Checkpointer(run, every_min=args.checkpoint_every, resume=args.resume is not None, config=vars(args),
                        ignore=("address", "actors"))  # (the cluster and its size may change between the parts)
    ckpt.register(alg=alg)
    c = ckpt.track(env_steps=0, updates=0, recent=[], eval_mean=float("nan"), reached=False,
                   generation=[0] * args.actors, actors_replaced=0, predictions=0, predict_batches=0, step_calls=0,
                   step_call_s=0.0, step_env_s=0.0, predict_wait_s=0.0)
    try:
        ckpt.start()  # a resumed run continues from its checkpoint: learner, counters, RNGs, curve, clock
    except CheckpointError as err:
        raise SystemExit(f"--resume: {err}") from None
    c.generation += [0] * (args.actors - len(c.generation))
    if args.address is None:  # one CPU per actor, plus one so that a replacement starts while a dead one is freed
        parl.connect(cpu_num=args.actors + 1)
    else:
        parl.connect(args.address)
    learner = Learner(args, cfg, alg, c)
    learner.start()
    actors_ready_s = time.perf_counter() - t0
    bar = tqdm(total=cfg["total_steps"], initial=c.env_steps, disable=args.no_progress, unit="frame",
               smoothing=0.05)
    try:
        train(learner, run, ckpt, bar)
    except BaseException:  # a SIGTERM / Ctrl-C (checkpoint saved, SystemExit) or an error
        learner.shutdown()
        parl.disconnect()
        raise
    finally:
        bar.close()
    learner.shutdown()
    if learner.error is not None:
        parl.disconnect()
        raise SystemExit(f"GA3C stopped: {type(learner.error).__name__}: {learner.error}")
    eval_source, last_games = "greedy", c.recent[-EVAL_EPISODES:]
    if not c.reached:
        if is_atari(args.env):  # greedy Atari games take minutes: report the last training games instead
            c.eval_mean, eval_source = (float(np.mean(last_games)) if last_games else float("nan")), "train_episodes"
        else:
            c.eval_mean = evaluate(alg, args.env, cfg, args.seed)
            run.scalar("eval/return_mean", c.eval_mean, c.env_steps)
            c.reached = c.eval_mean >= cfg["target_return"]
    run.close()
    wall_s, calls = run.elapsed(), max(c.step_calls, 1)
    result = run.write_summary({
        "env": args.env, "algorithm": "GA3C", "seed": args.seed, "actors": args.actors,
        "envs_per_actor": cfg["envs_per_actor"], "unroll_length": cfg["unroll_length"],
        "eval_return_mean": c.eval_mean, "eval_episodes": EVAL_EPISODES if eval_source == "greedy" else len(last_games),
        "eval_source": eval_source, "env_steps": c.env_steps, "updates": c.updates, "wall_s": round(wall_s, 3),
        "actors_ready_s": round(actors_ready_s, 3), "env_steps_per_s": round(c.env_steps / wall_s, 1),
        "predict_batch_requests": round(c.predictions / max(c.predict_batches, 1), 2),
        "step_call_ms": round(1000 * c.step_call_s / calls, 3), "step_env_ms": round(1000 * c.step_env_s / calls, 3),
        "predict_wait_ms": round(1000 * c.predict_wait_s / calls, 3), "actors_replaced": learner.replaced,
        "reached": c.reached, "resumed": ckpt.resumed, "target_return": cfg["target_return"]})
    ckpt.finish(c.env_steps)
    parl.disconnect()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
