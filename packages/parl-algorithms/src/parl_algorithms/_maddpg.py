"""Framework-free pieces of MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments"), shared by the torch and paddle twins: the action-space rule, the argument and batch checks with
their error messages (one text per error, whatever the backend), and the critic target's arithmetic.

Every function here reads only ``.shape`` / ``.ndim`` of its tensors or uses Python operators on them, so it
takes numpy arrays, torch tensors and paddle tensors alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["ACTOR_REG_COEF", "MAX_GRAD_NORM", "GUMBEL_EPS", "ActionSpec", "action_specs", "agent_index",
           "joint_batch", "target_q_shape", "policy_output", "critic_target"]

ACTOR_REG_COEF = 1e-3  # PARL's weight of mean(policy ** 2) in the actor loss
MAX_GRAD_NORM = 0.5  # PARL's clip of each optimizer's gradients (L2 norm of all of them together)
GUMBEL_EPS = 1e-4  # Gumbel uniforms are drawn in [eps, 1 - eps] (PARL's paddle twin): log(-log u) stays finite

_SUPPORTED = ("MADDPG supports gymnasium Box (continuous; one-dimensional) and Discrete action spaces, one per "
              "agent")


class ActionSpec(NamedTuple):
    """One agent's action space as MADDPG reads it.

    Attributes:
        continuous: ``True`` for a Box space (actions ``tanh(...)`` in ``[-1, 1]``), ``False`` for Discrete
            (actions are probability vectors over the ``act_dim`` choices).
        act_dim: the Box's size, or the Discrete space's ``n``.
    """

    continuous: bool
    act_dim: int


def _kind(space: Any) -> str:
    # by class name along the MRO, so gymnasium's spaces, old gym's and their subclasses all count
    names = {cls.__name__ for cls in type(space).__mro__}
    for kind in ("MultiDiscrete", "MultiBinary", "Box", "Discrete"):
        if kind in names:
            return kind
    return type(space).__name__


def action_specs(act_space: Any) -> list[ActionSpec]:
    """Every agent's :class:`ActionSpec`, in agent order.

    Continuous detection is one rule on both backends: a Box space is continuous, a Discrete space is discrete
    (PARL's torch and paddle twins each had their own ``hasattr`` test and looked at agent 0 only).

    Args:
        act_space: list (or tuple) of every agent's action space, e.g. ``env.action_space`` of
            ``parl.env.multiagent_env.MAenv``.

    Raises:
        TypeError: ``act_space`` is not a list of spaces.
        ValueError: a space is neither Box nor Discrete (e.g. MultiDiscrete), or a Box is not one-dimensional;
            the message names what is supported and how to get there.
    """
    if isinstance(act_space, (str, bytes)) or not isinstance(act_space, Sequence) or len(act_space) == 0:
        raise TypeError(f"MADDPG needs act_space, the list of EVERY agent's action space in agent order, got "
                        f"{act_space!r}; e.g. MADDPG(model, agent_index=i, act_space=env.action_space, ...) with "
                        "parl.env.multiagent_env.MAenv")
    specs = []
    for index, space in enumerate(act_space):
        kind = _kind(space)
        if kind == "Box":
            shape = tuple(space.shape)
            if len(shape) != 1:
                raise ValueError(f"{_SUPPORTED}; act_space[{index}] is a Box of shape {shape}: flatten it to one "
                                 "dimension (gymnasium.wrappers.FlattenObservation's counterpart for actions)")
            specs.append(ActionSpec(True, int(shape[0])))
        elif kind == "Discrete":
            specs.append(ActionSpec(False, int(space.n)))
        else:
            hint = (" (split a MultiDiscrete space into one Discrete agent per component, or use MAPPO, which takes "
                    "MultiDiscrete)") if kind in ("MultiDiscrete", "MultiBinary") else ""
            raise ValueError(f"{_SUPPORTED}; act_space[{index}] is {kind} ({space!r}){hint}")
    return specs


def agent_index(index: Any, n_agents: int) -> int:
    """``index`` if it is an int in ``[0, n_agents)``.

    Raises:
        TypeError: not an int.
        ValueError: out of range for the ``n_agents`` spaces of ``act_space``.
    """
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"MADDPG needs agent_index, this agent's position in act_space (an int), got {index!r}; "
                        "e.g. MADDPG(model, agent_index=0, act_space=env.action_space, ...)")
    if not 0 <= index < n_agents:
        raise ValueError(f"MADDPG: agent_index={index} is out of range for act_space of {n_agents} agents; pass "
                         f"0 <= agent_index < {n_agents} (one MADDPG per agent, all given the same act_space list)")
    return index


def _rows(value: Any) -> Any:
    return tuple(value.shape) if hasattr(value, "shape") else type(value).__name__


def joint_batch(obs_n: Any, act_n: Any, specs: Sequence[ActionSpec], method: str) -> int:
    """Check the joint observations and actions of one batch; return the batch size ``B``.

    Args:
        obs_n: list of ``n_agents`` arrays, agent ``j``'s float32 ``[B, obs_dim_j]``.
        act_n: list of ``n_agents`` arrays, agent ``j``'s float32 ``[B, act_dim_j]`` (a probability / one-hot
            vector for a Discrete space, ``[-1, 1]`` values for a Box).
        specs: every agent's :class:`ActionSpec` (from ``act_space``).
        method: ``"Q"`` or ``"learn"``, for the message.

    Raises:
        TypeError: ``obs_n`` / ``act_n`` is not a list of arrays.
        ValueError: a list's length differs from the number of agents in ``act_space``, an array is not
            ``[B, dim]``, the batch sizes differ, or an action's width is not its agent's ``act_dim``.
    """
    n = len(specs)
    for name, values in (("obs_n", obs_n), ("act_n", act_n)):
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"MADDPG.{method}: {name} must be a list with one [B, dim] array per agent (agent "
                            f"order of act_space), got {type(values).__name__}; e.g. [obs_0, obs_1, obs_2]")
        if len(values) != n:
            raise ValueError(f"MADDPG.{method}: {name} has {len(values)} entries but act_space has {n} agents; "
                             f"pass one array per agent, in act_space's order (mismatched agent counts between "
                             "the batch and the algorithm)")
    batch = None
    for name, values in (("obs_n", obs_n), ("act_n", act_n)):
        for j, value in enumerate(values):
            if getattr(value, "ndim", None) != 2:
                raise ValueError(f"MADDPG.{method}: {name}[{j}] must be a 2-D array [B, dim], got {_rows(value)}; "
                                 "batch single samples as x[None]")
            if batch is None:
                batch = value.shape[0]
            if value.shape[0] != batch:
                raise ValueError(f"MADDPG.{method}: every entry of obs_n and act_n needs the same batch size B, "
                                 f"got {_rows(value)} for {name}[{j}] and B={batch} for obs_n[0]")
    for j, (value, spec) in enumerate(zip(act_n, specs, strict=True)):
        if value.shape[1] != spec.act_dim:
            kind = "Box of size" if spec.continuous else "Discrete with n ="
            raise ValueError(f"MADDPG.{method}: act_n[{j}] has width {value.shape[1]} but act_space[{j}] is a "
                             f"{kind} {spec.act_dim}; store each agent's action as a [B, {spec.act_dim}] "
                             f"{'array in [-1, 1]' if spec.continuous else 'probability / one-hot vector'}")
    return int(batch)


def target_q_shape(target_q: Any, batch: int) -> None:
    """Raise ``ValueError`` unless ``target_q`` is ``[B]`` or ``[B, 1]``."""
    shape = tuple(getattr(target_q, "shape", ()))
    if shape not in ((batch,), (batch, 1)):
        raise ValueError(f"MADDPG.learn: target_q must be float32 [B] or [B, 1] with B={batch} (the batch of "
                         f"obs_n), got {shape if hasattr(target_q, 'shape') else type(target_q).__name__}; compute "
                         "it per sample as r + gamma * (1 - terminated) * Q'(o'_n, mu'(o'_n)) "
                         "(marl_functional.maddpg_target_q)")


def policy_output(output: Any, spec: ActionSpec, batch: int, index: int) -> None:
    """Check ``model.policy(obs)`` against the agent's action space.

    Args:
        output: logits float32 ``[B, n]`` (Discrete) or a pair ``(mean, log_std)``, each float32
            ``[B, act_dim]`` (Box).
        spec: this agent's :class:`ActionSpec`.
        batch: ``B``.
        index: the agent's index, for the message.

    Raises:
        ValueError: a Box space with a policy returning logits only, a Discrete space with a policy returning a
            pair, or a width that is not the space's.
    """
    pair = isinstance(output, (tuple, list))
    if spec.continuous:
        if not pair or len(output) != 2:
            raise ValueError(f"MADDPG: act_space[{index}] is a Box (continuous), so model.policy(obs) must return a "
                             f"pair (mean, log_std), each [B, {spec.act_dim}]; it returned "
                             f"{_rows(output) if not pair else f'{len(output)} values'}. Return (mean, log_std) "
                             "(PARL's continuous_actions=True models), or give a Discrete act_space")
        parts = output
    else:
        if pair:
            raise ValueError(f"MADDPG: act_space[{index}] is Discrete, so model.policy(obs) must return logits "
                             f"[B, {spec.act_dim}]; it returned a {type(output).__name__} of {len(output)} values "
                             "(a continuous policy's (mean, log_std)). Return logits, or give a Box act_space "
                             "(MAenv(..., continuous_actions=True))")
        parts = (output,)
    for part in parts:
        if tuple(getattr(part, "shape", ())) != (batch, spec.act_dim):
            what = "mean and log_std" if spec.continuous else "logits"
            raise ValueError(f"MADDPG: model.policy(obs) for agent {index} must give {what} of shape "
                             f"[B={batch}, {spec.act_dim}] (act_space[{index}]), got {_rows(part)}")


def critic_target(reward: Any, next_q: Any, terminated: Any, gamma: float) -> Any:
    """``y = r + gamma * (1 - terminated) * Q'(o'_1..o'_N, a'_1..a'_N)`` (Lowe et al. 2017, Algorithm 1), by
    Python operators, so numpy arrays, torch and paddle tensors alike (float ``terminated``).

    Args:
        reward: float32 ``[B]``, this agent's reward.
        next_q: float32 ``[B]``, the target critic at the next joint observation and the target actors' actions
            ``a'_j = mu'_j(o'_j)``.
        terminated: float32 ``[B]``, 1 where the episode terminated at this step (0 on a time-limit truncation:
            there the return goes on and is bootstrapped).
        gamma: discount in ``[0, 1]``.

    Returns:
        float32 ``[B]``.

    Raises:
        ValueError: the shapes differ or ``gamma`` is outside ``[0, 1]``.
    """
    shapes = {"reward": _rows(reward), "next_q": _rows(next_q), "terminated": _rows(terminated)}
    if len(set(shapes.values())) != 1 or len(shapes["reward"]) != 1:
        raise ValueError(f"maddpg_target_q: reward, next_q and terminated must all be [B], got {shapes}")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
        raise ValueError(f"maddpg_target_q: gamma must be in [0, 1], got {gamma!r}; e.g. gamma=0.95")
    return reward + float(gamma) * (1.0 - terminated) * next_q
