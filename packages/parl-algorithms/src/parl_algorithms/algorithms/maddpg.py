"""MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments") with
PARL's API: one algorithm per agent, a decentralised actor and a centralised critic over every agent's observation
and action; written once for torch and paddle.

The module holds, in the order of the paper: the agents' action spaces and the batch checks (one error text per
mistake, whatever the backend), the exploration samples (Gumbel-softmax for a Discrete space, a tanh-squashed
Gaussian for a Box), the critic target and the actor loss (the backends' ``marl_functional`` functions of these
names, with their ``ops`` bound), and :class:`MADDPG`. The checks read only ``.shape`` / ``.ndim`` of their
arguments, so they take numpy arrays, torch tensors and paddle tensors alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from parl_algorithms.algorithms._acting import act
from parl_algorithms.algorithms._off_policy import OffPolicyActorCritic

__all__ = ["ACTOR_REG_COEF", "MAX_GRAD_NORM", "GUMBEL_EPS", "ActionSpec", "action_specs", "check_agent_index",
           "joint_batch", "target_q_shape", "policy_output", "critic_target", "gumbel_softmax_sample",
           "squashed_gaussian_sample", "maddpg_target_q", "maddpg_actor_loss", "MADDPG"]

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


def check_agent_index(index: Any, n_agents: int) -> int:
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
    Python operators, so numpy arrays, torch and paddle tensors alike (float ``terminated``); the arithmetic of
    :func:`maddpg_target_q`.

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


# -- the exploration samples, the critic target and the actor loss (``ops``: the backend's layer) ---------------


def _check_2d(name: str, value: Any) -> None:
    if value.ndim != 2:
        raise ValueError(f"{name} must be float32 [B, act_dim], got shape {tuple(value.shape)}")


def gumbel_softmax_sample(ops: Any, logits: Any, uniform: Any) -> Any:
    """A relaxed one-hot sample ``softmax(logits + g)`` with Gumbel noise ``g = -log(-log u)`` and temperature 1
    (Jang et al. 2017 eq. 1; MADDPG's discrete actions, Lowe et al. 2017 appendix: PARL's ``sample``).

    Args:
        logits: float32 ``[B, n]``.
        uniform: float32 ``[B, n]`` in ``(0, 1)`` (MADDPG draws it in ``[1e-4, 1 - 1e-4]``).

    Returns:
        float32 ``[B, n]``, rows summing to 1.

    Raises:
        ValueError: the shapes differ or are not ``[B, n]``.
    """
    _check_2d("logits", logits)
    if uniform.shape != logits.shape:
        raise ValueError(f"uniform {tuple(uniform.shape)} must have the shape of logits {tuple(logits.shape)}")
    return ops.F.softmax(logits - (-uniform.log()).log(), -1)


def squashed_gaussian_sample(ops: Any, mean: Any, log_std: Any, normal: Any) -> Any:
    """``tanh(mean + exp(log_std) * normal)``: MADDPG's continuous exploration sample in ``[-1, 1]`` (PARL's
    ``sample``; the reparameterised Gaussian of Haarnoja et al. 2018 eq. 11, squashed as their appendix C).

    Args:
        mean, log_std: float32 ``[B, act_dim]``, the policy's outputs.
        normal: float32 ``[B, act_dim]`` standard normal noise.

    Returns:
        float32 ``[B, act_dim]`` in ``[-1, 1]``.

    Raises:
        ValueError: the shapes differ or are not ``[B, act_dim]``.
    """
    del ops  # (tensor methods only)
    _check_2d("mean", mean)
    if log_std.shape != mean.shape or normal.shape != mean.shape:
        raise ValueError(f"mean {tuple(mean.shape)}, log_std {tuple(log_std.shape)} and normal "
                         f"{tuple(normal.shape)} must have the same shape [B, act_dim]")
    return (mean + log_std.exp() * normal).tanh()


def maddpg_target_q(ops: Any, reward: Any, next_q: Any, terminated: Any, gamma: float) -> Any:
    """MADDPG's critic target ``y = r_i + gamma * (1 - terminated) * Q'_i(o'_1..o'_N, mu'_1(o'_1)..mu'_N(o'_N))``
    (Lowe et al. 2017, eq. 6 / Algorithm 1); the agent computes it and hands it to ``MADDPG.learn``.

    Args:
        reward: float32 ``[B]``, agent ``i``'s reward.
        next_q: float32 ``[B]``, ``MADDPG.Q(next_obs_n, next_act_n, use_target_model=True)`` with
            ``next_act_n[j] = MADDPG_j.sample(next_obs_n[j], use_target_model=True)``.
        terminated: float32 / bool ``[B]``, 1 where the episode terminated (0 on a truncation).
        gamma: discount in ``[0, 1]``.

    Returns:
        float32 ``[B]`` (no gradient flows into ``next_q``).

    Raises:
        ValueError: the shapes differ or ``gamma`` is outside ``[0, 1]``.
    """
    return critic_target(reward, next_q.detach(), ops.as_float(terminated, "terminated"), gamma)


def maddpg_actor_loss(ops: Any, q: Any, policy_out: Any, reg_coef: float = ACTOR_REG_COEF) -> Any:
    """MADDPG's actor loss ``-mean(Q_i(o_n, a_1..mu_i(o_i)..a_N)) + reg_coef * mean(policy_out ** 2)``
    (Lowe et al. 2017 eq. 5, with PARL's and the authors' code's small penalty on the policy's raw outputs).

    Args:
        q: float32 ``[B]``, the critic at the batch's joint actions with agent ``i``'s replaced by its policy's
            sample.
        policy_out: float32 ``[B, n]`` logits (Discrete) or ``[B, 2 * act_dim]`` mean and log_std concatenated.
        reg_coef: weight of the penalty (PARL: 1e-3).

    Returns:
        a float32 scalar.

    Raises:
        ValueError: ``q`` is not ``[B]`` for the ``B`` rows of ``policy_out``.
    """
    del ops  # (tensor methods only)
    if q.ndim != 1 or policy_out.ndim != 2 or q.shape[0] != policy_out.shape[0]:
        raise ValueError(f"q must be [B] and policy_out [B, dim], got {tuple(q.shape)} and "
                         f"{tuple(policy_out.shape)}")
    return -q.mean() + reg_coef * policy_out.square().mean()


# -- the algorithm ------------------------------------------------------------------------------------------


class MADDPG(OffPolicyActorCritic):
    """MADDPG for agent ``agent_index``: Gumbel-softmax actions for a Discrete space, a tanh-squashed Gaussian
    for a Box space; the critic ``Q_i(o_1..o_N, a_1..a_N)`` is learnt on targets the agent computes (PARL).

    The model must define ``policy(obs) -> logits`` float32 ``[B, n]`` (Discrete) or ``(mean, log_std)``, each
    float32 ``[B, act_dim]`` (Box); ``value(obs_n, act_n) -> Q`` float32 ``[B]`` or ``[B, 1]`` for lists of every
    agent's ``[B, obs_dim_j]`` / ``[B, act_dim_j]``; ``get_actor_params()`` and ``get_critic_params()``.

    ``learn`` takes an actor step (loss ``-Q + 1e-3 * mean(policy ** 2)``), then a critic step (mean squared
    error to ``target_q``), each with Adam and the gradients' global L2 norm clipped to 0.5 (PARL's paddle twin
    clipped each gradient tensor: one rule here, the global norm), then a soft target update: PARL's order and
    constants. The same math, checks and errors on torch and paddle.

    Args:
        model: this agent's actor-critic model (a ``parl.Model`` of the class's framework); the target is
            ``copy.deepcopy(model)``.
        agent_index: this agent's position in ``act_space``.
        act_space: every agent's action space, in agent order (gymnasium ``Box`` or ``Discrete``; e.g.
            ``MAenv(...).action_space``). The agent's own space decides continuous or discrete.
        gamma: discount in ``[0, 1]`` (read by the agent's target; PARL's examples: 0.95).
        tau: Polyak rate in ``[0, 1]`` (``target = (1 - tau) * target + tau * model``; PARL: 0.01).
        actor_lr, critic_lr: Adam learning rates (PARL: 0.01).
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework, ``act_space`` is not a list of
            spaces, or ``agent_index`` is not an int.
        ValueError: ``agent_index`` is out of range, a space is neither Box nor Discrete (e.g. MultiDiscrete), the
            model lacks a required method, or a hyperparameter is missing / out of range.
    """

    max_grad_norm = MAX_GRAD_NORM

    def __init__(self, model: Any, agent_index: int | None = None, act_space: list[Any] | None = None,
                 gamma: float | None = None, tau: float | None = None, actor_lr: float | None = None,
                 critic_lr: float | None = None, *, device: Any = None) -> None:
        specs = action_specs(act_space)
        index = check_agent_index(agent_index, len(specs))
        super().__init__(model, gamma, tau, actor_lr, critic_lr, device=device)
        self.agent_index = index
        self.act_space = list(act_space)
        self.action_specs = specs
        self.continuous_actions = specs[index].continuous

    # -- random draws (one place each, so that a test can serve both backends the same numbers) -----------
    def _uniform(self, like: Any) -> Any:
        """float32 uniforms in ``[GUMBEL_EPS, 1 - GUMBEL_EPS]`` of ``like``'s shape and device (the Gumbel noise)."""
        return self.ops.uniform(tuple(like.shape), GUMBEL_EPS, 1.0 - GUMBEL_EPS, like)

    def _normal(self, like: Any) -> Any:
        """float32 standard normal draws of ``like``'s shape and device (the Gaussian exploration noise)."""
        return self.ops.randn_like(like)

    # -- policy -------------------------------------------------------------------------------------
    def _policy(self, obs: Any, use_target_model: bool = False) -> Any:
        model = self.target_model if use_target_model else self.model
        out = model.policy(obs)
        policy_output(out, self.action_specs[self.agent_index], obs.shape[0], self.agent_index)
        return out

    def _sample(self, policy: Any) -> Any:
        if self.continuous_actions:
            mean, log_std = policy
            return squashed_gaussian_sample(self.ops, mean, log_std, self._normal(mean))
        return gumbel_softmax_sample(self.ops, policy, self._uniform(policy))

    def predict(self, obs: Any) -> Any:
        """The greedy action of this agent.

        Args:
            obs: float32 ``[B, obs_dim]`` (or one observation ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]``: softmax probabilities (Discrete; the env takes the argmax) or ``tanh(mean)``
            in ``[-1, 1]`` (Box).
        """
        def greedy(x: Any) -> Any:
            policy = self._policy(x)
            return policy[0].tanh() if self.continuous_actions else self.ops.F.softmax(policy, -1)

        return act(self, "predict", obs, greedy)

    def sample(self, obs: Any, use_target_model: bool = False) -> Any:
        """An exploration action of this agent (differentiable in the policy's parameters).

        Args:
            obs: float32 ``[B, obs_dim]`` (or one observation ``[obs_dim]``).
            use_target_model: act with the target policy ``mu'_i`` (for the critic target).

        Returns:
            float32 ``[B, act_dim]``: a Gumbel-softmax sample with temperature 1 (Discrete) or
            ``tanh(mean + exp(log_std) * N(0, 1))`` (Box).
        """
        return act(self, "sample", obs, lambda x: self._sample(self._policy(x, use_target_model)))

    # -- critic -------------------------------------------------------------------------------------
    def _joint(self, obs_n: Any, act_n: Any, method: str) -> tuple[list[Any], list[Any], int]:
        ops = self.ops
        if isinstance(obs_n, (list, tuple)):
            obs_n = [ops.as_float(x, f"obs_n[{j}]") for j, x in enumerate(ops.to_device(self.device, *obs_n))]
        if isinstance(act_n, (list, tuple)):
            act_n = [ops.as_float(x, f"act_n[{j}]") for j, x in enumerate(ops.to_device(self.device, *act_n))]
        return obs_n, act_n, joint_batch(obs_n, act_n, self.action_specs, method)

    def Q(self, obs_n: list[Any], act_n: list[Any], use_target_model: bool = False) -> Any:  # noqa: N802
        """This agent's centralised critic ``Q_i(o_1..o_N, a_1..a_N)``.

        Args:
            obs_n: every agent's observations, a list of float32 ``[B, obs_dim_j]`` (numpy or tensors).
            act_n: every agent's actions, a list of float32 ``[B, act_dim_j]``.
            use_target_model: evaluate the target critic ``Q'_i``.

        Returns:
            float32 ``[B]``.

        Raises:
            TypeError, ValueError: see :func:`joint_batch` (e.g. a list whose length is not the number of agents
            in ``act_space``).
        """
        try:
            obs_n, act_n, _ = self._joint(obs_n, act_n, "Q")
            model = self.target_model if use_target_model else self.model
            return self.ops.flat_q(model.value(obs_n, act_n), "MADDPG")
        except (ValueError, RuntimeError) as err:
            self.ops.shape_error(self, "Q", err, (obs_n, act_n, use_target_model))
            raise

    def learn(self, obs_n: list[Any], act_n: list[Any], target_q: Any) -> Any:
        """One actor step, one critic step, then a soft target update (PARL's order).

        Args:
            obs_n: every agent's observations, a list of float32 ``[B, obs_dim_j]``.
            act_n: every agent's stored actions, a list of float32 ``[B, act_dim_j]``.
            target_q: float32 ``[B]`` or ``[B, 1]``, ``r_i + gamma * (1 - terminated) * Q'_i(o'_n, mu'(o'_n))``
                (``parl_algorithms.<backend>.marl_functional.maddpg_target_q``).

        Returns:
            the critic loss, a float32 scalar tensor (PARL's return).

        Raises:
            TypeError, ValueError: mismatched agent counts or batch shapes, or a ``target_q`` of the wrong shape.
        """
        try:
            return self._learn(obs_n, act_n, target_q)
        except (ValueError, RuntimeError) as err:
            self.ops.shape_error(self, "learn", err, (obs_n, act_n, target_q))
            raise

    def _learn(self, obs_n: Any, act_n: Any, target_q: Any) -> Any:
        ops = self.ops
        obs_n, act_n, batch = self._joint(obs_n, act_n, "learn")
        target_q_shape(target_q, batch)
        (target_q,) = ops.to_device(self.device, target_q)
        target_q = ops.as_float(target_q, "target_q").reshape([batch]).detach()
        i = self.agent_index

        with self.frozen_critic():  # the actor's loss backpropagates through the critic to a_i only
            policy = self._policy(obs_n[i])
            joint = list(act_n)
            joint[i] = self._sample(policy)
            q = ops.flat_q(self.model.value(obs_n, joint), "MADDPG")
            raw = ops.concat(policy, -1) if self.continuous_actions else policy
            actor_loss = maddpg_actor_loss(ops, q, raw)
        ops.step(self.actor_optimizer, actor_loss, self.max_grad_norm)

        pred_q = ops.flat_q(self.model.value(obs_n, act_n), "MADDPG")
        critic_loss = ops.F.mse_loss(pred_q, target_q)
        ops.step(self.critic_optimizer, critic_loss, self.max_grad_norm)
        self.sync_target()
        self.last_info = {"train/critic_loss": ops.info_scalar(critic_loss),
                          "train/actor_loss": ops.info_scalar(actor_loss), "train/q_mean": ops.info_mean(pred_q)}
        return critic_loss.detach()
