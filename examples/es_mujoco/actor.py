"""The ES sampling actor: plays many perturbed policies at once (one ``@parl.remote_class`` process each).

One ``sample`` call evaluates ``2 * pairs`` perturbations of the learner's iteration (mirrored pairs drawn by an
EvoKit sampling clone from the machine's shared noise table), all episodes in lockstep: one batched policy
forward per step for every live episode, so a small MLP costs one numpy call per step, not one per episode.
With ``hp["envpool"]`` the episodes' envs are one ``parl.env.EnvPoolMuJoCo`` (the same task in EnvPool's C++
pool, each step one call for every live episode); their initial states come from EnvPool's generator (seeded by
the actor), not from ``episode_seed``.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
from policy import make_policy

from evokit import ESAgent, MeanStdFilter
from evokit.config import parse_prototxt
from evokit.models import make_backend


class ESActor:
    """Evaluates perturbations of the learner's policy.

    Args:
        config_text: the EvoKit config (protobuf text) of the learner, noise table included.
        hp: the run's hyper-parameters (``env_name``, ``hidden``, ``backend``, ``filter_update_prob``,
            ``action_noise_std``, ``eval_prob``, ``seed``).
        actor_id: distinct per actor (and per replacement), so actors draw different noise.
    """

    def __init__(self, config_text: str, hp: dict, actor_id: int) -> None:
        if hp["backend"] == "torch":
            import torch

            torch.set_num_threads(1)
        self.hp = hp
        self.env_name = hp["env_name"]
        probe = gym.make(self.env_name)
        self.obs_dim = probe.observation_space.shape[0]
        self.act_dim = probe.action_space.shape[0]
        self.act_low, self.act_high = probe.action_space.low, probe.action_space.high
        probe.close()
        model = make_policy(hp["backend"], self.obs_dim, self.act_dim, hp["hidden"], seed=hp["seed"])
        self.agent = ESAgent(model, config=parse_prototxt(config_text))
        self.agent.init_solver()
        self.clone = self.agent.clone(actor_id)
        self.slots: list = []  # per-episode model back ends for the torch / paddle back ends
        self.filter = MeanStdFilter((self.obs_dim,), update_prob=hp["filter_update_prob"], seed=actor_id)
        self.rng = np.random.default_rng([hp["seed"], actor_id])
        self.envs: list[gym.Env] = []
        self.pool = None  # hp["envpool"]: one EnvPoolMuJoCo of as many envs as episodes per call
        self.pool_seed = hp["seed"] * 1_000_003 + actor_id * 10_007
        self.timers = {"env": 0.0, "policy": 0.0, "noise": 0.0}

    def _envs(self, n: int) -> list[gym.Env]:
        while len(self.envs) < n:
            self.envs.append(gym.make(self.env_name, disable_env_checker=True))
        return self.envs[:n]

    def _policy(self, params: np.ndarray):
        """Return ``act(obs [L, obs_dim], live int [L]) -> actions [L, act_dim]`` for float32 [P, num_params]
        policies, ``live`` the indices of the episodes still running."""
        if self.hp["backend"] == "numpy":
            mlp = self.agent.model
            cache = {"live": None, "params": params}

            def act(obs: np.ndarray, live: np.ndarray) -> np.ndarray:
                if cache["live"] is None or len(cache["live"]) != len(live):  # re-index only when an episode ends
                    cache["live"], cache["params"] = live, params[live]
                return mlp.forward_population(cache["params"], obs)
            return act
        while len(self.slots) < len(params):  # torch / paddle: one model per episode, one forward each
            self.slots.append(make_backend(self.agent.model).copy())
        for slot, p in zip(self.slots, params, strict=False):
            slot.set_flat(p)
        return lambda obs, live: np.stack([self.slots[j].predict(obs[k:k + 1])[0] for k, j in enumerate(live)])

    def _envpool(self, n: int):
        if self.pool is None or self.pool.num_envs != n:
            from parl_core.env.envpool_mujoco import EnvPoolMuJoCo

            if self.pool is not None:
                self.pool.close()
            self.pool = EnvPoolMuJoCo(self.env_name, n, seed=self.pool_seed + n)
        return self.pool

    def rollouts(self, act, n: int, episode_seed: int, update_filter: bool, noise_std: float) -> tuple:
        """Play one episode per policy, all in lockstep; return ``(returns float64 [n], lengths int64 [n])``."""
        if self.hp.get("envpool"):
            pool = self._envpool(n)
            obs = pool.reset()[0]
        else:
            envs = self._envs(n)
            obs = np.stack([env.reset(seed=episode_seed + k)[0] for k, env in enumerate(envs)])
        returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
        live = np.arange(n)
        while live.size:
            t0 = time.perf_counter()
            actions = act(self.filter(obs, update=update_filter), live)
            if noise_std > 0:
                actions = actions + noise_std * self.rng.standard_normal(actions.shape)
            actions = np.clip(actions, self.act_low, self.act_high)
            t1 = time.perf_counter()
            if self.hp.get("envpool"):  # the live episodes' envs in one call
                obs, rewards, terminated, truncated = pool.step_envs(actions, live)
                returns[live] += rewards
                lengths[live] += 1
                keep = ~(terminated | truncated)
                self.timers["policy"] += t1 - t0
                self.timers["env"] += time.perf_counter() - t1
                live, obs = live[keep], obs[keep]
                continue
            keep, next_obs = [], []
            for k, j in enumerate(live):
                o, r, terminated, truncated, _ = envs[j].step(actions[k])
                returns[j] += r
                lengths[j] += 1
                if not (terminated or truncated):
                    keep.append(k)
                    next_obs.append(o)
            self.timers["policy"] += t1 - t0
            self.timers["env"] += time.perf_counter() - t1
            live = live[keep]
            obs = np.stack(next_obs) if next_obs else obs[:0]
        return returns, lengths

    def sample(self, state: dict, filter_state: dict, pairs: int, episode_seed: int) -> dict:
        """Evaluate ``pairs`` mirrored pairs of perturbations of the learner's iteration ``state``.

        Args:
            state: the learner's ``agent.get_sampling_state()``.
            filter_state: the learner's ``MeanStdFilter.state_dict()``.
            pairs: mirrored pairs to play (``2 * pairs`` episodes, in lockstep).
            episode_seed: base reset seed of the episodes.

        Returns:
            ``infos`` (SamplingInfo bytes), ``returns`` float64 [2 * pairs], ``lengths`` int64 [2 * pairs],
            ``eval_returns`` / ``eval_lengths`` (unperturbed episodes, drawn with ``eval_prob`` per call),
            ``filter_increment``, ``timers`` (seconds spent in env stepping, policy, noise since the last
            call) and ``pid``.
        """
        t0 = time.perf_counter()
        self.agent.set_sampling_state(state)
        self.filter.load_state_dict(filter_state)
        infos = [self.clone.add_noise() for _ in range(2 * pairs)]
        act = self._policy(np.stack([self.clone.candidate_params(i) for i in infos]))
        self.timers["noise"] += time.perf_counter() - t0
        returns, lengths = self.rollouts(act, len(infos), episode_seed, True, self.hp["action_noise_std"])
        eval_returns, eval_lengths = np.zeros(0), np.zeros(0, dtype=np.int64)
        if self.rng.random() < self.hp["eval_prob"]:
            eval_act = self._policy(np.asarray(state["theta"], dtype=np.float32)[None])  # the unperturbed policy
            eval_returns, eval_lengths = self.rollouts(eval_act, 1, episode_seed + 10**6, False, 0.0)
        timers, self.timers = self.timers, {"env": 0.0, "policy": 0.0, "noise": 0.0}
        return {"infos": [i.to_bytes() for i in infos], "returns": returns, "lengths": lengths,
                "eval_returns": eval_returns, "eval_lengths": eval_lengths,
                "filter_increment": self.filter.pop_increment(), "timers": timers, "pid": os.getpid()}
