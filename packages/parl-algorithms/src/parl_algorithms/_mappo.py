"""MAPPO's framework-free half, written once for the torch and paddle twins: hyperparameter and model-contract
checks, the action-space layout, the batch shapes of ``learn``, and the numpy arithmetic of the multi-agent
batch ``[T, E, n_agents, ...]`` (agent ids, GAE on PopArt-denormalised values, masked advantage normalisation,
minibatches).

MAPPO: Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games" (arXiv 2103.01955);
PopArt: van Hasselt et al. 2016, "Learning values across many orders of magnitude". PARL 2.2.1's
``parl/algorithms/torch/mappo.py`` and ``benchmark/torch/mappo`` define the API and the recipe.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parl_algorithms._validation import check_model_method, positive

__all__ = [
    "DEFAULT_ADAM_EPS", "mappo_hyperparameters", "popart_hyperparameters", "ActionLayout", "model_action_layout",
    "action_layout", "check_learn_shapes", "check_sample_shapes", "rows", "check_n_agents", "check_unroll",
    "agent_ids", "with_agent_ids", "central_obs", "mappo_gae", "normalize_advantages", "minibatches",
]

DEFAULT_ADAM_EPS = 1e-5  # PARL's benchmark/torch/mappo/train.py (EPS); PARL's MAPPO crashes on eps=None
DISCRETE, MULTI_DISCRETE, CONTINUOUS = "discrete", "multi_discrete", "continuous"


def mappo_hyperparameters(clip_param: Any, value_loss_coef: Any, entropy_coef: Any, initial_lr: Any,
                          huber_delta: Any, eps: Any, max_grad_norm: Any) -> dict[str, Any]:
    """MAPPO's checked constructor arguments (PARL's positional order), ``None`` filled where PARL has no value.

    Returns:
        ``{"clip_param", "value_loss_coef", "entropy_coef", "initial_lr", "huber_delta", "eps": float,
        "max_grad_norm": float or None}``; ``eps=None`` becomes :data:`DEFAULT_ADAM_EPS` (1e-5, PARL's example),
        ``max_grad_norm=None`` means no clipping (PARL's MAPPO raised on ``None``).

    Raises:
        ValueError: a value is missing, not a number or out of range; the message shows a valid call.
    """
    example = "MAPPO(model, clip_param=0.2, value_loss_coef=1.0, entropy_coef=0.01, initial_lr=7e-4, huber_delta=10.0)"

    def nonneg(value: Any, name: str) -> float:
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"MAPPO needs {name} >= 0, got {name}={value!r}; e.g. {example}")
        return float(value)

    return {
        "clip_param": positive(clip_param, "clip_param", "MAPPO", "0.2"),
        "value_loss_coef": nonneg(value_loss_coef, "value_loss_coef"),
        "entropy_coef": nonneg(entropy_coef, "entropy_coef"),
        "initial_lr": positive(initial_lr, "initial_lr", "MAPPO", "7e-4"),
        "huber_delta": positive(huber_delta, "huber_delta", "MAPPO", "10.0"),
        "eps": DEFAULT_ADAM_EPS if eps is None else positive(eps, "eps", "MAPPO", "1e-5"),
        "max_grad_norm": None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "MAPPO", "10.0"),
    }


def popart_hyperparameters(norm_axes: Any, beta: Any, epsilon: Any) -> dict[str, Any]:
    """PopArt's checked arguments: ``norm_axes`` an int >= 1, ``beta`` in (0, 1), ``epsilon`` > 0.

    Raises:
        ValueError: out of range; the message shows PARL's defaults.
    """
    if isinstance(norm_axes, bool) or not isinstance(norm_axes, int) or norm_axes < 1:
        raise ValueError(f"PopArt needs norm_axes, the number of leading batch axes, as an int >= 1, got "
                         f"{norm_axes!r}; e.g. PopArt(weight, bias, norm_axes=1, beta=0.99999, epsilon=1e-5)")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0.0 < beta < 1.0:
        raise ValueError(f"PopArt needs the decay beta in (0, 1), got {beta!r}; e.g. PopArt(weight, bias, "
                         "beta=0.99999)")
    return {"norm_axes": norm_axes, "beta": float(beta), "epsilon": positive(epsilon, "epsilon", "PopArt", "1e-5")}


class ActionLayout:
    """How a policy's actions look: ``kind`` (``"discrete"``, ``"multi_discrete"``, ``"continuous"``) and sizes.

    Attributes:
        kind: the action kind.
        sizes: the number of choices of each component (``[n]`` for Discrete, ``nvec`` for MultiDiscrete), or
            ``[act_dim]`` for a Box.
        width: the columns of an action row ``[B, width]``: 1 (Discrete), ``len(nvec)`` (MultiDiscrete),
            ``act_dim`` (Box).
        log_prob_width: the columns of ``log_probs [B, k]`` (PARL: one per MultiDiscrete component, else 1).
    """

    def __init__(self, kind: str, sizes: list[int]):
        self.kind, self.sizes = kind, [int(s) for s in sizes]
        self.width = 1 if kind == DISCRETE else len(self.sizes) if kind == MULTI_DISCRETE else self.sizes[0]
        self.log_prob_width = len(self.sizes) if kind == MULTI_DISCRETE else 1

    def __repr__(self) -> str:
        return f"ActionLayout({self.kind!r}, {self.sizes})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionLayout) and (self.kind, self.sizes) == (other.kind, other.sizes)


def action_layout(space: Any) -> ActionLayout:
    """The :class:`ActionLayout` of one agent's gymnasium action space.

    Args:
        space: ``gymnasium.spaces.Discrete`` (``n`` choices, ``start`` 0), ``MultiDiscrete`` (a 1-D ``nvec``) or
            ``Box`` (1-D, finite or infinite bounds; a Gaussian policy, actions clipped to the bounds by the caller).

    Raises:
        ValueError: any other space (Tuple, Dict, MultiBinary, Text, a Box of rank > 1, a Discrete with
            ``start != 0``); the message names the supported ones.
    """
    name = type(space).__name__
    hint = ("MAPPO takes Discrete, MultiDiscrete (1-D nvec) and 1-D Box action spaces; wrap the env so each agent "
            "has one of those (e.g. flatten a Tuple of Discretes into a MultiDiscrete)")
    if name == "Discrete":
        if int(getattr(space, "start", 0)) != 0:
            raise ValueError(f"MAPPO: Discrete action space with start={space.start}; actions must be 0..n-1 "
                             "(shift them in the env wrapper)")
        return ActionLayout(DISCRETE, [int(space.n)])
    if name == "MultiDiscrete":
        nvec = np.asarray(space.nvec)
        if nvec.ndim != 1:
            raise ValueError(f"MAPPO: MultiDiscrete with nvec of shape {nvec.shape}; {hint}")
        return ActionLayout(MULTI_DISCRETE, nvec.tolist())
    if name == "Box":
        if len(space.shape) != 1:
            raise ValueError(f"MAPPO: Box action space of shape {space.shape}; {hint}")
        return ActionLayout(CONTINUOUS, [int(space.shape[0])])
    raise ValueError(f"MAPPO: unsupported action space {space!r}; {hint}")


def model_action_layout(model: Any, use_popart: bool) -> ActionLayout:
    """Check MAPPO's model contract (PARL's) and return the actions the model's policy produces.

    PARL's contract: ``model.actor`` (its parameters are the actor's optimizer's) with ``multi_discrete``,
    ``model.critic`` (the critic's optimizer's) with ``v_out`` (the output Linear PopArt rescales),
    ``model.policy(obs)`` and ``model.value(cent_obs)``, and ``model.act_dim`` (the list of component sizes when
    ``multi_discrete``). This rebuild adds ``model.actor.continuous_action = True`` for a Box action space, whose
    ``policy(obs)`` returns ``(mean, std)`` as PARL's PPO models do.

    Raises:
        ValueError: a part of the contract is missing; the message names it.
    """
    check_model_method(model, "policy", "MAPPO")
    check_model_method(model, "value", "MAPPO")
    for part in ("actor", "critic"):
        if not hasattr(model, part):
            raise ValueError(f"MAPPO needs model.{part}, the sub-model that holds the {part}'s parameters (it gets "
                             f"an Adam optimizer of its own; PARL's contract): set self.{part} = ... in "
                             f"{type(model).__name__}.__init__")
    if use_popart and not hasattr(model.critic, "v_out"):
        raise ValueError("MAPPO(use_popart=True) needs model.critic.v_out, the critic's output Linear layer (1 "
                         "output) that PopArt rescales; name that layer v_out, or pass use_popart=False")
    multi = bool(getattr(model.actor, "multi_discrete", False))
    continuous = bool(getattr(model.actor, "continuous_action", False))
    if multi and continuous:
        raise ValueError("MAPPO: model.actor sets both multi_discrete and continuous_action; set one of them (or "
                         "neither, for a Discrete action space)")
    act_dim = getattr(model, "act_dim", None)
    if multi:
        if isinstance(act_dim, (int, np.integer)) or act_dim is None or not all(
                isinstance(a, (int, np.integer)) and a > 0 for a in act_dim):
            raise ValueError(f"MAPPO: model.actor.multi_discrete is True, so model.act_dim must be the list of the "
                             f"component sizes (e.g. [5, 10]), got {act_dim!r}")
        return ActionLayout(MULTI_DISCRETE, list(act_dim))
    if act_dim is not None and not (isinstance(act_dim, (int, np.integer)) and act_dim > 0):
        raise ValueError(f"MAPPO: model.act_dim must be an int > 0 (the number of actions, or the Box's act_dim), "
                         f"got {act_dim!r}; for a MultiDiscrete space set model.actor.multi_discrete = True")
    return ActionLayout(CONTINUOUS if continuous else DISCRETE, [-1 if act_dim is None else int(act_dim)])


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in value.shape)


def rows(value: Any, name: str, batch: int, width: int = 1) -> None:
    """Raise ``ValueError`` unless ``value`` is ``[B, width]`` (or ``[B]`` when ``width`` is 1)."""
    shape = _shape(value)
    if shape == (batch, width) or (width == 1 and shape == (batch,)):
        return
    want = f"[B={batch}, {width}]" + (" (or [B])" if width == 1 else "")
    raise ValueError(f"MAPPO.learn: {name} must be {want}, got {shape}; every argument has one row per sample "
                     "(agents of a shared model flattened into the batch: x.reshape(-1, *x.shape[3:]) for "
                     "[T, E, n_agents, ...])")


def check_sample_shapes(cent_obs: Any, obs: Any, method: str = "sample") -> int:
    """``B`` of ``cent_obs [B, cent_obs_dim]`` and ``obs [B, obs_dim]``.

    Raises:
        ValueError: not 2-D, or the batch sizes differ (e.g. one row per agent in ``obs`` but one per env in
            ``cent_obs``).
    """
    if len(_shape(obs)) != 2 or len(_shape(cent_obs)) != 2:
        raise ValueError(f"MAPPO.{method}: cent_obs and obs must be [B, cent_obs_dim] and [B, obs_dim], got "
                         f"{_shape(cent_obs)} and {_shape(obs)}; flatten envs and agents into B (for [E, n_agents, "
                         "obs_dim]: obs.reshape(-1, obs_dim), and repeat the state per agent)")
    if _shape(cent_obs)[0] != _shape(obs)[0]:
        raise ValueError(f"MAPPO.{method}: cent_obs has {_shape(cent_obs)[0]} rows but obs has {_shape(obs)[0]}; "
                         "give each agent's row its central observation (np.repeat(state, n_agents, axis=0) for a "
                         "shared model)")
    return _shape(obs)[0]


def check_learn_shapes(layout: ActionLayout, share_obs: Any, obs: Any, actions: Any, value_preds: Any,
                       returns: Any, old_log_probs: Any, adv_targ: Any, active_masks: Any = None,
                       available_actions: Any = None) -> int:
    """Check ``MAPPO.learn``'s batch (PARL's shapes) and return ``B``.

    Shapes: ``share_obs [B, cent_obs_dim]``, ``obs [B, obs_dim]``, ``actions [B, 1]`` (Discrete; ``[B]`` too),
    ``[B, k]`` (MultiDiscrete of k components) or ``[B, act_dim]`` (Box), ``value_preds``, ``returns``,
    ``adv_targ``, ``active_masks`` ``[B, 1]`` (or ``[B]``), ``old_log_probs [B, 1]`` or ``[B, k]``,
    ``available_actions [B, n_actions]`` (Discrete only).

    Raises:
        ValueError: a shape does not fit; the message names the argument and the expected shape.
    """
    batch = check_sample_shapes(share_obs, obs, "learn")
    if layout.kind == DISCRETE:
        rows(actions, "actions (Discrete: one index per row)", batch)
    else:
        kind = "MultiDiscrete: one index per component" if layout.kind == MULTI_DISCRETE else "Box: act_dim floats"
        if layout.sizes[0] == -1:  # a Box model without act_dim: any width
            if len(_shape(actions)) != 2 or _shape(actions)[0] != batch:
                rows(actions, f"actions ({kind})", batch, -1)
        else:
            rows(actions, f"actions ({kind})", batch, layout.width)
    for name, value in (("value_preds", value_preds), ("returns", returns), ("adv_targ", adv_targ)):
        rows(value, name, batch)
    rows(old_log_probs, "old_log_probs", batch, layout.log_prob_width)
    if active_masks is not None:
        rows(active_masks, "active_masks", batch)
    if available_actions is not None:
        if layout.kind != DISCRETE:
            raise ValueError("MAPPO: available_actions masks a Discrete policy's logits; pass None for "
                             f"{layout.kind} actions")
        shape = _shape(available_actions)
        if len(shape) != 2 or shape[0] != batch:
            raise ValueError(f"MAPPO: available_actions must be bool [B={batch}, n_actions], got {shape}")
    return batch


def check_n_agents(n_agents: int, **counts: int | None) -> int:
    """Raise ``ValueError`` unless every given agent count equals ``n_agents`` (the env's).

    Args:
        n_agents: the environment's number of agents.
        counts: other counts by what they count, e.g. ``models=len(algorithms)``, ``batch=obs.shape[2]``;
            ``None`` entries are ignored.

    Raises:
        ValueError: a count differs; the message names which and how to fix it.
    """
    if isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) or n_agents < 1:
        raise ValueError(f"n_agents must be an int >= 1, got {n_agents!r}")
    for what, count in counts.items():
        if count is not None and int(count) != int(n_agents):
            fix = {"models": "build one model per agent (or one shared model with the agent id in obs)",
                   "batch": "lay the batch out as [T, E, n_agents, ...] with the env's agents in env.agents order",
                   "agent_ids": "build the shared model for this env's agent count (obs_dim + n_agents inputs)"}
            raise ValueError(f"MAPPO: the env has {n_agents} agents but the {what} count {count}; "
                             f"{fix.get(what, 'use the same agent count everywhere')}")
    return int(n_agents)


_UNROLL_KEYS = {
    # key: the number of axes after [T, E, n_agents] (None: any)
    "obs": 1, "actions": None, "log_probs": 0, "rewards": 0,
}


def check_unroll(unroll: dict[str, np.ndarray], n_agents: int) -> tuple[int, int]:
    """Check a collected unroll's arrays ``[T, E, n_agents, ...]`` and return ``(T, E)``.

    Keys: ``obs [T, E, n, obs_dim]``, ``actions [T, E, n]`` (Discrete) or ``[T, E, n, width]``, ``log_probs``
    and ``rewards [T, E, n]``, ``terminated`` / ``truncated`` ``bool [T, E]``; ``values`` (if present)
    ``[T + 1, E, n]`` (the last row bootstraps).

    Raises:
        ValueError: a key is missing, or an array's leading axes are not ``[T, E, n_agents]``.
    """
    missing = sorted((set(_UNROLL_KEYS) | {"terminated", "truncated"}) - set(unroll))
    if missing:
        raise ValueError(f"MAPPO unroll lacks {missing}; collect obs, actions, log_probs, rewards, terminated and "
                         "truncated as [T, E, n_agents, ...]")
    t, e = np.shape(unroll["rewards"])[:2]
    for key, trailing in _UNROLL_KEYS.items():
        shape = np.shape(unroll[key])
        if len(shape) < 3 or shape[:2] != (t, e):
            raise ValueError(f"MAPPO unroll: {key} must be [T={t}, E={e}, n_agents, ...], got {shape}")
        check_n_agents(n_agents, batch=shape[2])
        if trailing is not None and len(shape) != 3 + trailing:
            raise ValueError(f"MAPPO unroll: {key} must have {3 + trailing} axes [T, E, n_agents"
                             f"{', dim' if trailing else ''}], got {shape}")
    if "values" in unroll and np.shape(unroll["values"]) != (t + 1, e, n_agents):
        raise ValueError(f"MAPPO unroll: values must be [T + 1, E, n_agents] = {(t + 1, e, n_agents)} (the last row "
                         f"bootstraps), got {np.shape(unroll['values'])}")
    for key in ("terminated", "truncated"):
        if np.shape(unroll[key]) != (t, e):
            raise ValueError(f"MAPPO unroll: {key} must be bool [T={t}, E={e}] (episode-level), got "
                             f"{np.shape(unroll[key])}")
    return int(t), int(e)


def agent_ids(n_agents: int) -> np.ndarray:
    """float32 ``[n_agents, n_agents]``: row i is agent i's one-hot id (appended to a shared model's inputs)."""
    return np.eye(n_agents, dtype=np.float32)


def with_agent_ids(x: np.ndarray) -> np.ndarray:
    """``x [..., n_agents, dim]`` -> float32 ``[..., n_agents, dim + n_agents]`` with each agent's one-hot id
    appended (EPyMARL's ``obs_agent_id``; lets one shared model act differently per agent)."""
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[-2]
    ids = np.broadcast_to(agent_ids(n), (*x.shape[:-2], n, n))
    return np.concatenate([x, ids], axis=-1)


def central_obs(state: np.ndarray, n_agents: int) -> np.ndarray:
    """The centralised critic's input of every agent: ``state [..., state_dim]`` repeated per agent, float32
    ``[..., n_agents, state_dim]`` (PARL's ``share_obs``: the same global observation for every agent)."""
    state = np.asarray(state, dtype=np.float32)
    return np.broadcast_to(state[..., None, :], (*state.shape[:-1], n_agents, state.shape[-1]))


def mappo_gae(rewards: np.ndarray, values: np.ndarray, next_values: np.ndarray, terminated: np.ndarray,
              truncated: np.ndarray, gamma: float, gae_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE of every agent (Schulman et al. 2016), with values already denormalised (PARL's
    ``SeparatedReplayBuffer.compute_returns`` with PopArt: ``value_normalizer.denormalize(value_preds)``).

    Episode ends are env-level: a terminated step does not bootstrap, a truncated one (MPE's time limit)
    bootstraps from ``next_values`` = V(final state) (PARL's buffer treated the time limit as terminal).

    Args:
        rewards: float32 ``[T, E, n_agents]``, each agent's own reward.
        values: float32 ``[T, E, n_agents]``, V(s_t) in return units.
        next_values: float32 ``[T, E, n_agents]``, V(s_{t+1}), or V(final state) where the episode ended.
        terminated, truncated: bool ``[T, E]``.
        gamma, gae_lambda: in ``[0, 1]``.

    Returns:
        ``(advantages, returns)``, float32 ``[T, E, n_agents]``.

    Raises:
        ValueError: shapes do not fit.
    """
    from parl_core.utils.returns import compute_gae

    rewards = np.asarray(rewards, dtype=np.float32)
    if rewards.ndim != 3:
        raise ValueError(f"mappo_gae: rewards must be [T, E, n_agents], got {rewards.shape}")
    shape = rewards.shape
    ends = []
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        flag = np.asarray(flag, dtype=bool)
        if flag.shape != shape[:2]:
            raise ValueError(f"mappo_gae: {name} must be bool [T, E] = {shape[:2]}, got {flag.shape}")
        ends.append(np.broadcast_to(flag[..., None], shape))
    return compute_gae(rewards, values, next_values, ends[0], ends[1], gamma=gamma, gae_lambda=gae_lambda)


def normalize_advantages(advantages: np.ndarray, active_masks: np.ndarray | None = None) -> np.ndarray:
    """PARL's ``SimpleAgent.learn`` normalisation: ``(A - mean) / (std + 1e-5)`` over the active samples
    (``np.nanmean`` / ``np.nanstd`` with inactive entries set to NaN; population std).

    Args:
        advantages: float32 ``[...]``.
        active_masks: ``[...]`` of the same shape (1 where the agent was alive), or ``None`` (all active).

    Returns:
        float32 of ``advantages``' shape.
    """
    advantages = np.asarray(advantages, dtype=np.float32)
    masked = advantages.copy()
    if active_masks is not None:
        active_masks = np.asarray(active_masks)
        if active_masks.shape != advantages.shape:
            raise ValueError(f"normalize_advantages: active_masks {active_masks.shape} must have the advantages' "
                             f"shape {advantages.shape}")
        masked[active_masks == 0.0] = np.nan
    return ((advantages - np.nanmean(masked)) / (np.nanstd(masked) + 1e-5)).astype(np.float32)


def minibatches(batch: int, num_mini_batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    """PARL's ``sample_batch`` split: a random permutation of ``batch`` rows cut into ``num_mini_batch`` slices of
    ``batch // num_mini_batch`` rows (the remainder is dropped, as PARL).

    Raises:
        ValueError: ``num_mini_batch`` < 1 or larger than ``batch``.
    """
    if isinstance(num_mini_batch, bool) or not isinstance(num_mini_batch, int) or not 1 <= num_mini_batch <= batch:
        raise ValueError(f"num_mini_batch must be an int in [1, {batch}] (the batch rows), got {num_mini_batch!r}")
    size = batch // num_mini_batch
    perm = rng.permutation(batch)
    return [perm[i * size:(i + 1) * size] for i in range(num_mini_batch)]
