"""The three env families behind :class:`~parl_core.env.multiagent.MultiAgentEnv`: MPE (mpe2, the PettingZoo
parallel API), LBF (lbforaging 2.0) and RWARE (rware 2.0). Their packages are imported when an env is made."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from parl_core.env._multiagent_core import MultiAgentEnv

__all__ = ["MPE2_MODULES", "ForagingEnv", "MPE2Env", "WarehouseEnv"]

MARL_EXTRA = "pip install 'parl-core[marl]'"

# MPE scenario -> the mpe2 module that has it (PARL's names and the old PettingZoo versions map here)
MPE2_MODULES = {
    "simple": "simple_v3",
    "simple_adversary": "simple_adversary_v3",
    "simple_crypto": "simple_crypto_v3",
    "simple_push": "simple_push_v3",
    "simple_reference": "simple_reference_v3",
    "simple_speaker_listener": "simple_speaker_listener_v4",
    "simple_spread": "simple_spread_v3",
    "simple_tag": "simple_tag_v3",
    "simple_world_comm": "simple_world_comm_v3",
    "simple_formation": "simple_formation_v1",
    "simple_line": "simple_line_v1",
    "collect_treasure": "collect_treasure_v1",
}

# the reward unit of the mpe2 scenarios without local_ratio (read in mpe2 1.1.1's scenario code)
MPE2_REWARD_UNITS = {
    "simple": "single agent: minus its squared distance to the landmark",
    "simple_adversary": (
        "per-agent, two teams: the good agents share one reward (minus their best distance to the target plus the "
        "adversary's distance to it); the adversary's is minus its own distance to the target"
    ),
    "simple_crypto": (
        "per-agent, two teams: alice and bob share one reward (minus bob's reconstruction error plus eve's); "
        "eve's is minus its own error"
    ),
    "simple_push": (
        "per-agent, two teams: the agent's is minus its distance to its goal; the adversary's is that distance "
        "minus its own distance to the goal"
    ),
    "simple_speaker_listener": (
        "shared, global: both agents get the same reward (minus the listener's squared distance to the target)"
    ),
    "simple_tag": (
        "per-agent, two teams: every adversary gets +10 per adversary-good agent collision (the same for all "
        "adversaries); the good agent -10 per collision and a penalty for leaving the arena"
    ),
    "simple_world_comm": (
        "per-agent, two teams: the adversaries share a reward for catching good agents (plus their own distance "
        "shaping); each good agent its own (caught, food eaten, leaving the arena)"
    ),
    "collect_treasure": "per-agent: each agent's own distance shaping plus one shared global reward for deposits",
}


def import_env_package(name: str, env_id: str) -> Any:
    """Imports an env package, or raises ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"{env_id!r} needs the {name} package: {MARL_EXTRA}") from exc


def package_version(name: str) -> str:
    """``"<package> <version>"`` of an installed package (for results tables)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return name


class MPE2Env(MultiAgentEnv):
    """An mpe2 scenario through the PettingZoo parallel API (``parallel_env``).

    Agents keep ``possible_agents`` order (the parallel API empties ``agents`` at the end of an episode).
    Episodes end by truncation at ``max_cycles`` (default 25), or by termination in the scenarios that have
    a terminal condition (``terminate_on_success=True``). The state is mpe2's ``state()``: the agents'
    observations concatenated (spread with N=3: 3 x 18 = 54).

    Args:
        env_id: ``"mpe2:<module>"``.
        **kwargs: passed to ``parallel_env`` (e.g. ``N``, ``local_ratio``, ``max_cycles``, ``continuous_actions``).

    Raises:
        ValueError: mpe2 has no such module.
        ImportError: mpe2 is missing.
    """

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        self.env_id = env_id
        module_name = env_id.split(":", 1)[1]
        import_env_package("mpe2", env_id)
        try:
            module = importlib.import_module(f"mpe2.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name is None or not f"mpe2.{module_name}".startswith(exc.name) or exc.name == "mpe2":
                raise ImportError(f"{env_id!r} needs mpe2 and its dependencies ({exc}): {MARL_EXTRA}") from exc
            raise ValueError(
                f"mpe2 has no scenario {module_name!r}; use one of {sorted('mpe2:' + m for m in MPE2_MODULES.values())}"
            ) from exc
        if not hasattr(module, "parallel_env"):
            raise ValueError(
                f"mpe2.{module_name} is not a scenario (it has no parallel_env); use e.g. 'mpe2:simple_spread_v3'"
            )
        self._env = module.parallel_env(**kwargs)
        self.env_version = package_version("mpe2")
        agents = list(self._env.possible_agents)
        core = self._env.unwrapped
        self._setup(
            agents,
            [self._env.observation_space(a) for a in agents],
            [self._env.action_space(a) for a in agents],
            core.max_cycles,
        )
        self.local_ratio = core.local_ratio
        scenario = module_name.rsplit("_v", 1)[0]
        if core.local_ratio is None:
            self.reward_unit = MPE2_REWARD_UNITS.get(scenario, "per-agent: each agent's own reward from the scenario")
        elif core.local_ratio == 0:
            self.reward_unit = (
                "shared, global: every agent gets the same global reward each step (local_ratio=0); the "
                "summed return is n_agents x the per-agent return"
            )
        else:
            self.reward_unit = (
                f"per-agent mix: (1 - {core.local_ratio}) x the global reward + {core.local_ratio} x the agent's "
                "local reward (local_ratio); agents' rewards differ"
            )
        self.agent_infos: dict[str, Any] = {}

    def _reset_raw(self, seed: int | None) -> Sequence[np.ndarray]:
        obs, infos = self._env.reset(seed=seed)
        self.agent_infos = infos
        return [obs[a] for a in self.agents]

    def _step_raw(self, actions: list[Any]) -> tuple[Sequence[np.ndarray], Any, bool, bool]:
        agents = self.agents
        obs, rewards, terminations, truncations, infos = self._env.step(dict(zip(agents, actions, strict=True)))
        self.agent_infos = infos
        terminated = any(terminations.values())
        truncated = not terminated and any(truncations.values())
        return [obs[a] for a in agents], [rewards[a] for a in agents], terminated, truncated


class ForagingEnv(MultiAgentEnv):
    """Level-Based Foraging (lbforaging 2.0, ``Foraging-*-v3``).

    lbforaging reports both kinds of end as ``terminated=True`` (its ``truncated`` is always False); here
    the episode is ``terminated`` when all food has been eaten and ``truncated`` when it reached its step
    limit (``max_episode_steps``, 50) with food left. ``avail_actions`` are the env's own valid actions of
    each agent this step (``ForagingEnv._valid_actions``: no move into a wall, food or the border, LOAD
    only next to food); the env turns an invalid action into NONE. Rewards are per agent: a loaded food's
    level split in proportion to the loaders' levels, normalised so that all food of an episode sums to 1.

    Args:
        env_id: the id as given (``"Foraging-..."`` or ``"lbforaging:Foraging-..."``).
        bare_id: the gymnasium id (no prefix).
        **kwargs: passed to ``gymnasium.make``; ``max_episode_steps`` sets the env's own step limit.

    Raises:
        ValueError: lbforaging has no such id.
        ImportError: lbforaging is missing.
    """

    def __init__(self, env_id: str, bare_id: str, **kwargs: Any) -> None:
        self.env_id = env_id
        import_env_package("lbforaging", env_id)
        max_episode_steps = kwargs.pop("max_episode_steps", None)
        self._env = _gym_make(env_id, bare_id, "Foraging-8x8-2p-2f-coop-v3", **kwargs)
        self._core = self._env.unwrapped
        if max_episode_steps is not None:
            self._core._max_episode_steps = int(max_episode_steps)
        self.env_version = package_version("lbforaging")
        n = self._core.n_agents
        self._setup(
            [f"agent_{i}" for i in range(n)],
            list(self._core.observation_space),
            list(self._core.action_space),
            self._core._max_episode_steps,
        )
        self.reward_unit = (
            "per-agent, local: each agent's share of the food it helped load (normalised: all food of an "
            "episode sums to 1); team return = sum over agents"
        )
        self._players = self._core.players

    def _reset_raw(self, seed: int | None) -> Sequence[np.ndarray]:
        obs, _ = self._core.reset(seed=seed)
        return obs

    def _step_raw(self, actions: list[Any]) -> tuple[Sequence[np.ndarray], Any, bool, bool]:
        obs, rewards, done, _, _ = self._core.step(actions)
        terminated = done and not self._core.field.any()
        return obs, rewards, terminated, done and not terminated

    def avail_actions(self) -> np.ndarray:
        """bool [n_agents, 6]: the actions lbforaging counts as valid for each agent now (NONE always)."""
        valid = self._core._valid_actions
        rows = [[False] * 6 for _ in self._players]
        for row, player in zip(rows, self._players, strict=True):
            for action in valid[player]:
                row[action._value_] = True  # Action.value without the enum property's cost
        return np.array(rows)


class WarehouseEnv(MultiAgentEnv):
    """The multi-robot warehouse (rware 2.0, ``rware-*-v2``) with its flat observations (71 per agent on tiny).

    RWARE has no terminal state: an episode is ``truncated`` at ``max_steps`` (500), or after
    ``max_inactivity_steps`` without a delivery when that is set; ``terminated`` is always False. Rewards
    are individual (``RewardType.INDIVIDUAL``): +1 to the agent that delivers a requested shelf. Every
    action is always available (the env resolves collisions itself).

    Args:
        env_id: the id as given (``"rware-..."`` or ``"rware:rware-..."``).
        bare_id: the gymnasium id (no prefix).
        **kwargs: passed to ``gymnasium.make`` (e.g. ``max_steps``, ``reward_type``).

    Raises:
        ValueError: rware has no such id, or the env has no step limit (``max_steps=None``).
        ImportError: rware is missing.
    """

    def __init__(self, env_id: str, bare_id: str, **kwargs: Any) -> None:
        self.env_id = env_id
        rware = import_env_package("rware", env_id)
        self._env = _gym_make(env_id, bare_id, "rware-tiny-2ag-v2", **kwargs)
        self._core = self._env.unwrapped
        if not self._core.max_steps:
            raise ValueError(f"{env_id}: the env needs a step limit; pass max_steps=500 (rware's default)")
        self.env_version = package_version("rware")
        n = self._core.n_agents
        self._setup(
            [f"agent_{i}" for i in range(n)],
            list(self._core.observation_space),
            list(self._core.action_space),
            self._core.max_steps,
        )
        reward_type = self._core.reward_type
        if reward_type == rware.RewardType.GLOBAL:
            self.reward_unit = "shared, global: every agent gets +1 for each requested shelf delivered by any agent"
        elif reward_type == rware.RewardType.TWO_STAGE:
            self.reward_unit = (
                "per-agent, local (two-stage): +0.5 to the agent that delivers a requested shelf and +0.5 when it "
                "returns it; team return = sum over agents"
            )
        else:
            self.reward_unit = (
                "per-agent, local: +1 to the agent that delivers a requested shelf (individual rewards); team "
                "return = sum over agents"
            )

    def _reset_raw(self, seed: int | None) -> Sequence[np.ndarray]:
        obs, _ = self._core.reset(seed=seed)
        return obs

    def _step_raw(self, actions: list[Any]) -> tuple[Sequence[np.ndarray], Any, bool, bool]:
        obs, rewards, done, _, _ = self._core.step(actions)
        return obs, rewards, False, bool(done)


def _gym_make(env_id: str, bare_id: str, example: str, **kwargs: Any) -> Any:
    import gymnasium as gym

    try:
        gym.spec(bare_id)
    except gym.error.Error as exc:
        raise ValueError(f"{env_id!r} is not a registered id; use an id such as {example!r}") from exc
    # the wrappers gymnasium.make adds (order and API checks) are bypassed when stepping: `unwrapped` is used
    return gym.make(bare_id, disable_env_checker=True, **kwargs)
