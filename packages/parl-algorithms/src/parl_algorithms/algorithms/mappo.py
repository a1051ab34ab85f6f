"""MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games", arXiv 2103.01955)
and PopArt (van Hasselt et al. 2016, "Learning values across many orders of magnitude") with PARL 2.2.1's API
(``parl/algorithms/torch/mappo.py``; ``benchmark/torch/mappo`` defines the recipe): a centralised critic, the
clipped Huber value loss with value active masks, PopArt value normalisation, separate Adam optimizers for actor
and critic; Discrete, MultiDiscrete and Box actions; one model per agent or one shared by all (the caller flattens
agents into the batch). Written once for torch and paddle (PARL 2.2.1 had no paddle MAPPO).

The module holds, in this order: the hyperparameter and model-contract checks, the action-space layout and the
batch shapes of ``learn``; the losses and PopArt's statistics (the backends' ``marl_functional`` functions of
these names, with their ``ops`` bound); :class:`PopArt` and :class:`MAPPO`; and the numpy arithmetic of the
multi-agent batch ``[T, E, n_agents, ...]`` a training loop needs (agent ids, GAE on PopArt-denormalised values,
masked advantage normalisation, minibatches).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from parl_algorithms._validation import check_model_method, positive

__all__ = [
    "DEFAULT_ADAM_EPS", "mappo_hyperparameters", "popart_hyperparameters", "ActionLayout", "model_action_layout",
    "action_layout", "check_learn_shapes", "check_sample_shapes", "rows", "masked_mean", "huber_loss",
    "mappo_value_loss", "mappo_policy_loss", "popart_update", "popart_debiased_mean_var", "popart_preserve_outputs",
    "PopArt", "MAPPO", "check_n_agents", "check_unroll", "agent_ids", "with_agent_ids", "central_obs", "mappo_gae",
    "normalize_advantages", "minibatches",
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




# -- the losses and PopArt's statistics (``ops``: the backend's layer) --------------------------------------------


def _mappo_column(name: str, value: Any, batch: int) -> Any:
    if value.ndim == 1:
        value = value.unsqueeze(1)
    if tuple(value.shape) != (batch, 1):
        raise ValueError(f"{name} must be [B, 1] (or [B]) with B={batch}, got {tuple(value.shape)}")
    return value


def masked_mean(ops: Any, x: Any, active_masks: Any) -> Any:
    """``sum(x * m) / sum(m)`` (PARL's MAPPO mean over active agents), or ``mean(x)`` when ``active_masks`` is None.

    Args:
        x: float32 ``[B, 1]`` (or ``[B]``).
        active_masks: float32 ``[B, 1]`` (or ``[B]``), 1 where the agent was active, or ``None``.

    Returns:
        0-d float32.

    Raises:
        ValueError: a shape is not ``[B, 1]``.
    """
    x = _mappo_column("x", x, x.shape[0])
    if active_masks is None:
        return x.mean()
    active_masks = ops.as_float(_mappo_column("active_masks", active_masks, x.shape[0]), "active_masks")
    return (x * active_masks).sum() / active_masks.sum()


def huber_loss(ops: Any, error: Any, delta: float) -> Any:
    """Elementwise Huber loss ``e^2 / 2`` for ``|e| <= delta``, ``delta * (|e| - delta / 2)`` beyond (Huber 1964).

    PARL's (and the MAPPO repo's) ``huber_loss`` weights the linear part with ``e > delta``, so an error below
    ``-delta`` costs 0 and has no gradient; this one is symmetric.

    Args:
        error: float32 ``[...]``.
        delta: > 0.

    Returns:
        float32 of ``error``'s shape.

    Raises:
        ValueError: ``delta`` is not > 0.
    """
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    abs_error = error.abs()
    return ops.where(abs_error <= delta, 0.5 * error.pow(2), delta * (abs_error - 0.5 * delta))


def mappo_value_loss(ops: Any, values: Any, value_preds: Any, returns: Any, clip_param: float,
                     huber_delta: float | None, active_masks: Any = None) -> Any:
    """MAPPO's clipped value loss (Yu et al. 2022, eq. 2 and the value-clipping suggestion, Huber as in PARL):

    ``V_clip = V_old + clip(V - V_old, -eps, eps)``, ``L = max(huber(R - V), huber(R - V_clip))``, averaged over
    the active agents (``sum(L * m) / sum(m)``) or over all rows. ``huber_delta=None`` uses ``e^2 / 2``.

    Args:
        values: float32 ``[B, 1]`` (or ``[B]``) current predictions (with gradient), PopArt-normalised when it is on.
        value_preds: float32 ``[B, 1]`` predictions at collection time, same scale.
        returns: float32 ``[B, 1]`` value targets, same scale (PopArt: ``normalize(returns)``).
        clip_param: epsilon > 0.
        huber_delta: Huber's delta > 0, or ``None`` for the squared error.
        active_masks: float32 ``[B, 1]`` or ``None``.

    Returns:
        0-d float32.

    Raises:
        ValueError: shapes differ or a parameter is out of range.
    """
    batch = values.shape[0]
    values = _mappo_column("values", values, batch)
    value_preds = _mappo_column("value_preds", value_preds, batch)
    returns = _mappo_column("returns", returns, batch)
    if not clip_param > 0:
        raise ValueError(f"mappo_value_loss: clip_param must be > 0, got {clip_param}")
    clipped = value_preds + (values - value_preds).clip(-clip_param, clip_param)
    error_clipped, error_original = returns - clipped, returns - values
    if huber_delta is None:
        loss_clipped, loss_original = 0.5 * error_clipped.pow(2), 0.5 * error_original.pow(2)
    else:
        loss_clipped = huber_loss(ops, error_clipped, huber_delta)
        loss_original = huber_loss(ops, error_original, huber_delta)
    return masked_mean(ops, loss_original.maximum(loss_clipped), active_masks)


def mappo_policy_loss(ops: Any, log_probs: Any, old_log_probs: Any, adv_targ: Any, clip_param: float,
                      active_masks: Any = None) -> Any:
    """MAPPO's clipped surrogate (Yu et al. 2022, eq. 1; PPO: Schulman et al. 2017, eq. 7), negated:

    ``ratio = exp(log_probs - old_log_probs)`` per action component, ``-sum_k min(ratio A, clip(ratio) A)``
    per row, averaged over the active agents (PARL: a MultiDiscrete action's components each get a ratio).

    Args:
        log_probs: float32 ``[B, k]`` (k = 1, or the MultiDiscrete components), with gradient.
        old_log_probs: float32 ``[B, k]`` at collection time.
        adv_targ: float32 ``[B, 1]`` (or ``[B]``) advantages.
        clip_param: epsilon > 0.
        active_masks: float32 ``[B, 1]`` or ``None``.

    Returns:
        0-d float32.

    Raises:
        ValueError: shapes differ or ``clip_param`` is not > 0.
    """
    if log_probs.ndim != 2 or tuple(old_log_probs.shape) != tuple(log_probs.shape):
        raise ValueError(f"mappo_policy_loss: log_probs and old_log_probs must both be [B, k], got "
                         f"{tuple(log_probs.shape)} and {tuple(old_log_probs.shape)}")
    adv_targ = _mappo_column("adv_targ", adv_targ, log_probs.shape[0])
    if not clip_param > 0:
        raise ValueError(f"mappo_policy_loss: clip_param must be > 0, got {clip_param}")
    ratio = (log_probs - old_log_probs).exp()
    surrogate = (ratio * adv_targ).minimum(ratio.clip(1.0 - clip_param, 1.0 + clip_param) * adv_targ)
    return masked_mean(ops, -surrogate.sum(-1, keepdim=True), active_masks)


def popart_update(ops: Any, mean: Any, mean_sq: Any, debiasing_term: Any, batch: Any, beta: float,
                  norm_axes: int = 1) -> tuple[Any, Any, Any]:
    """PopArt's running statistics after one batch of targets (van Hasselt et al. 2016, eq. 4-5, with the
    bias-corrected exponential moving average of PARL / the MAPPO repo):

    ``mean' = beta mean + (1 - beta) E[y]``, ``mean_sq' = beta mean_sq + (1 - beta) E[y^2]``,
    ``debiasing' = beta debiasing + (1 - beta)``; ``E`` over the first ``norm_axes`` axes.

    Args:
        mean, mean_sq: float32 ``[out]`` (``[1]`` for a scalar value).
        debiasing_term: float32 0-d.
        batch: float32 ``[B, ..., out]`` targets (unnormalised returns).
        beta: decay in (0, 1).
        norm_axes: how many leading axes of ``batch`` are averaged.

    Returns:
        ``(mean', mean_sq', debiasing_term')``, new tensors.
    """
    axes = tuple(range(norm_axes))
    batch = ops.as_float(batch, "batch")
    return (mean * beta + batch.mean(axes) * (1.0 - beta),
            mean_sq * beta + batch.pow(2).mean(axes) * (1.0 - beta),
            debiasing_term * beta + (1.0 - beta))


def popart_debiased_mean_var(ops: Any, mean: Any, mean_sq: Any, debiasing_term: Any,
                             epsilon: float) -> tuple[Any, Any]:
    """``(mu, sigma^2)``: ``mu = mean / max(d, epsilon)``, ``sigma^2 = max(mean_sq / max(d, epsilon) - mu^2, 1e-2)``
    (PARL's ``debiased_mean_var``; the variance floor 1e-2 keeps sigma >= 0.1).

    Returns:
        ``(mu [out], sigma^2 [out])``.
    """
    del ops  # (tensor methods only)
    denominator = debiasing_term.clip(min=epsilon)
    debiased_mean = mean / denominator
    return debiased_mean, (mean_sq / denominator - debiased_mean.pow(2)).clip(min=1e-2)


def popart_preserve_outputs(ops: Any, weight: Any, bias: Any, old_mean: Any, old_std: Any, new_mean: Any,
                            new_std: Any, *, out_axis: int) -> tuple[Any, Any]:
    """The output layer rescaled so that its unnormalised outputs are unchanged (van Hasselt et al. 2016, eq. 6,
    "Preserving Outputs Precisely"): ``W' = W sigma / sigma'``, ``b' = (sigma b + mu - mu') / sigma'``, so
    ``sigma' (W' h + b') + mu' = sigma (W h + b) + mu`` for every ``h``.

    Args:
        weight: float32, the framework's Linear layout: torch ``[out, in]``, paddle ``[in, out]``.
        bias: float32 ``[out]``.
        old_mean, old_std, new_mean, new_std: float32 ``[out]``.
        out_axis: the output axis of ``weight`` (bound by each backend's ``marl_functional``: torch 0, paddle 1).

    Returns:
        ``(weight', bias')``, new tensors.
    """
    del ops  # (tensor methods only)
    scale = old_std / new_std
    if out_axis == 0:  # one row per output: a column of scales
        scale = scale.reshape([-1] + [1] * (weight.ndim - 1))
    return weight * scale, (old_std * bias + old_mean - new_mean) / new_std


# -- PopArt and the algorithm -------------------------------------------------------------------------------

_MASKED_LOGIT = -1e10  # unavailable actions' logits (the MAPPO repo's value)
_INFO_KEYS = ("train/value_loss", "train/policy_loss", "train/entropy", "train/approx_kl", "train/clip_fraction",
              "train/actor_grad_norm", "train/critic_grad_norm")


class PopArt:
    """PopArt value normalisation for a critic's output layer (PARL's ``PopArt``, from the MAPPO repo's
    ``onpolicy/algorithms/utils/popart.py``): a ``torch.nn.Module`` / ``paddle.nn.Layer`` of the class's framework.

    Keeps bias-corrected running moments of the value targets; :meth:`update` folds a batch of returns into them
    and rescales the critic's output layer so that its unnormalised predictions are preserved; the critic is
    trained on :meth:`normalize` d targets and its outputs are mapped back with :meth:`denormalize`.

    Args:
        weight: the output layer's weight (``model.critic.v_out.weight``: torch ``[1, hidden]``, paddle
            ``[hidden, 1]``), rescaled in place.
        bias: the output layer's bias ``[1]``, rescaled in place.
        norm_axes: the leading axes of a target batch that are averaged (1: ``[B, 1]``).
        beta: the statistics' decay (PARL: 0.99999, a horizon of ~1e5 batches).
        epsilon: floor of the debiasing term.
        device: where the statistics live: torch, default the weight's device; paddle, its process-wide device.

    Attributes:
        mean, mean_sq: float32 ``[1]`` running first and second moments (biased towards 0 early on).
        debiasing_term: float32 0-d, ``1 - beta^updates``.

    Raises:
        ValueError: ``norm_axes``, ``beta`` or ``epsilon`` out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops
    linear_out_axis: ClassVar[int]  # the output axis of the framework's Linear weight (torch 0, paddle 1)

    def __init__(self, weight: Any, bias: Any, norm_axes: int = 1, beta: float = 0.99999, epsilon: float = 1e-5,
                 *, device: Any = None) -> None:
        super().__init__()
        hp = popart_hyperparameters(norm_axes, beta, epsilon)
        self.norm_axes, self.beta, self.epsilon = hp["norm_axes"], hp["beta"], hp["epsilon"]
        # the critic owns these parameters: kept as plain references (not this module's), rescaled in place
        self.__dict__["weight"], self.__dict__["bias"] = weight, bias
        outputs = int(bias.shape[0]) if bias is not None and bias.ndim else 1
        self.register_buffer("mean", self._zeros([outputs], device))
        self.register_buffer("mean_sq", self._zeros([outputs], device))
        self.register_buffer("debiasing_term", self._zeros([], device))

    # -- what each backend defines ------------------------------------------------------------------
    def _zeros(self, shape: list[int], device: Any) -> Any:
        """float32 zeros of ``shape`` where the statistics live (``device``: the constructor's argument)."""
        raise NotImplementedError

    def _assign(self, target: Any, value: Any) -> None:
        """Write ``value`` into the tensor ``target`` in place (a buffer, or the critic's weight / bias)."""
        raise NotImplementedError

    def statistics(self) -> dict[str, Any]:
        """A copy of ``mean``, ``mean_sq`` and ``debiasing_term`` for a checkpoint (``MAPPO.state_dict``)."""
        raise NotImplementedError

    def load_statistics(self, stats: dict[str, Any], device: Any) -> None:
        """Restore what :meth:`statistics` returned (``device``: the algorithm's)."""
        raise NotImplementedError

    def _tensor(self, value: Any) -> Any:
        """``value`` (numpy or tensor) as a float32 tensor where the statistics are."""
        return self.ops.as_float(value, "input_vector")

    def _stat(self, statistic: Any) -> Any:
        """A statistic ``[out]`` ready to broadcast against a batch ``[B, ..., out]`` (torch: PARL's leading axes)."""
        return statistic

    # -- PopArt ------------------------------------------------------------------------------------------
    def reset_parameters(self) -> None:
        """Zero the statistics (PARL's)."""
        for buffer in (self.mean, self.mean_sq, self.debiasing_term):
            self._assign(buffer, self.ops.tensor(np.zeros(tuple(buffer.shape), np.float32)))

    @property
    def stddev(self) -> Any:
        """The debiased standard deviation float32 ``[1]`` (PARL kept a ``stddev`` tensor that stayed 1)."""
        return self.debiased_mean_var()[1].sqrt()

    def update(self, input_vector: Any) -> None:
        """Fold a batch of targets into the statistics and rescale the output layer (PopArt's "ART" then "POP").

        Args:
            input_vector: float32 ``[B, 1]`` unnormalised value targets (numpy or tensor).
        """
        ops = self.ops
        with ops.no_grad():
            batch = self._tensor(input_vector)
            old_mean, old_var = self.debiased_mean_var()
            new_stats = popart_update(ops, self.mean, self.mean_sq, self.debiasing_term, batch, self.beta,
                                      self.norm_axes)
            for buffer, value in zip((self.mean, self.mean_sq, self.debiasing_term), new_stats, strict=True):
                self._assign(buffer, value)
            new_mean, new_var = self.debiased_mean_var()
            weight, bias = popart_preserve_outputs(ops, self.weight, self.bias, old_mean, old_var.sqrt(), new_mean,
                                                   new_var.sqrt(), out_axis=self.linear_out_axis)
            self._assign(self.weight, weight)
            self._assign(self.bias, bias)

    def debiased_mean_var(self) -> tuple[Any, Any]:
        """``(mu [1], sigma^2 [1])``, bias-corrected, the variance floored at 1e-2 (PARL's)."""
        return popart_debiased_mean_var(self.ops, self.mean, self.mean_sq, self.debiasing_term, self.epsilon)

    def normalize(self, input_vector: Any) -> Any:
        """``(y - mu) / sigma``: a float32 tensor of ``input_vector``'s shape ``[B, ..., 1]``, where the statistics
        are."""
        x = self._tensor(input_vector)
        mean, var = self.debiased_mean_var()
        return (x - self._stat(mean)) / self._stat(var.sqrt())

    def denormalize(self, input_vector: Any) -> np.ndarray:
        """``x sigma + mu`` as a float32 numpy array (PARL returns numpy: its agents call it on buffer arrays)."""
        x = self._tensor(input_vector)
        mean, var = self.debiased_mean_var()
        with self.ops.no_grad():
            return self.ops.to_numpy(x * self._stat(var.sqrt()) + self._stat(mean))


class MAPPO:
    """Multi-Agent PPO with a centralised value function (PARL's ``MAPPO``).

    The model (PARL's contract; see :func:`model_action_layout`): ``model.actor`` and ``model.critic``
    (sub-modules, one Adam each), ``model.critic.v_out`` (the output Linear PopArt rescales), ``model.policy(obs)``
    -> logits ``[B, n]`` (Discrete), a list of logits (MultiDiscrete, with ``model.actor.multi_discrete = True``
    and ``model.act_dim`` the list of sizes) or ``(mean, std)`` each ``[B, act_dim]`` (Box, with
    ``model.actor.continuous_action = True``; the std may be ``[act_dim]``), and ``model.value(cent_obs)`` ->
    ``[B, 1]``. For a Box the std parameters must belong to ``model.actor``.

    One algorithm serves one model: per-agent parameters are one MAPPO per agent (PARL's example); a model shared
    by all agents gets every agent's rows in one batch (with the agent id in ``obs``).

    Differences from PARL's MAPPO (same signatures and returns):
        * The Huber loss is symmetric (PARL's gives no loss and no gradient for errors below ``-huber_delta``).
        * PopArt's statistics and the output layer are updated before the critic's forward pass, so the value
          loss compares predictions and targets on the same scale (van Hasselt et al. 2016, Algorithm 1); PARL
          forwarded first and compared old-scale predictions with new-scale targets.
        * ``active_masks=None`` means every row is active (PARL raised with ``use_value_active_masks=True``),
          ``max_grad_norm=None`` means no clipping, ``eps=None`` means 1e-5 (PARL raised on both).
        * ``sample`` / ``learn`` accept ``available_actions`` (bool ``[B, n]``, Discrete): unavailable actions get
          logits of -1e10 (the MAPPO repo's ``available_actions``), for agents with fewer actions than the model.
        * Box actions (PARL: Discrete and MultiDiscrete only) and ``device=``.

    Args:
        model: the actor-critic model described above (a ``parl.Model`` of the class's framework; ``v_out`` a
            ``torch.nn.Linear(hidden, 1)`` / ``paddle.nn.Linear(hidden, 1)`` with a bias when ``use_popart``).
        clip_param: the PPO ratio clip and the value clip epsilon (0.2).
        value_loss_coef: weight of the value loss (1).
        entropy_coef: weight of the entropy bonus (0.01).
        initial_lr: both optimizers' learning rate (7e-4).
        huber_delta: Huber loss delta of the value loss (10).
        eps: Adam's epsilon (None: 1e-5).
        max_grad_norm: global gradient-norm clip of actor and critic separately (10; None: no clip).
        use_popart: normalise value targets with :class:`PopArt` (``self.value_normalizer``; else ``None``).
        use_value_active_masks: average the value loss over active rows only.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        value_normalizer: the :class:`PopArt` of ``model.critic.v_out``, or ``None``.
        actor_optimizer, critic_optimizer: the two Adams.
        last_info: ``{"train/value_loss", "train/policy_loss", "train/entropy", "train/approx_kl",
            "train/clip_fraction", "train/actor_grad_norm", "train/critic_grad_norm"}`` of the last ``learn``.

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a part of the contract, or a hyperparameter is out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops
    popart_class: ClassVar[type[PopArt]]  # the backend's PopArt
    linear: ClassVar[type]  # the framework's Linear layer: PopArt rescales one, model.critic.v_out

    def __init__(self, model: Any, clip_param: float, value_loss_coef: float, entropy_coef: float,
                 initial_lr: float, huber_delta: float, eps: float | None = None, max_grad_norm: float | None = None,
                 use_popart: bool = True, use_value_active_masks: bool = True, *, device: Any = None) -> None:
        hp = mappo_hyperparameters(clip_param, value_loss_coef, entropy_coef, initial_lr, huber_delta, eps,
                                   max_grad_norm)
        super().__init__(model, device=device)
        self.layout = model_action_layout(model, bool(use_popart))
        self.multi_discrete = self.layout.kind == MULTI_DISCRETE
        self.continuous_action = self.layout.kind == CONTINUOUS
        self.clip_param, self.value_loss_coef = hp["clip_param"], hp["value_loss_coef"]
        self.entropy_coef, self.lr, self.huber_delta = hp["entropy_coef"], hp["initial_lr"], hp["huber_delta"]
        self.eps, self.max_grad_norm = hp["eps"], hp["max_grad_norm"]
        self._use_popart, self._use_value_active_masks = bool(use_popart), bool(use_value_active_masks)
        if self._use_popart:
            v_out = self.model.critic.v_out
            if not isinstance(v_out, self.linear) or v_out.weight.shape[self.popart_class.linear_out_axis] != 1 \
                    or v_out.bias is None:
                framework = self.linear.__module__.partition(".")[0]
                raise ValueError(f"MAPPO(use_popart=True): model.critic.v_out must be a {framework}.nn.Linear(hidden, "
                                 f"1) with a bias, got {v_out!r}; or pass use_popart=False")
            self.value_normalizer: PopArt | None = self.popart_class(v_out.weight, v_out.bias, device=self.device)
        else:
            self.value_normalizer = None
        actor_params = list(self.model.actor.parameters())
        critic_params = list(self.model.critic.parameters())
        if not actor_params or not critic_params:
            raise ValueError("MAPPO: model.actor and model.critic must each hold parameters (the two optimizers' "
                             "parameters); put the policy's layers under model.actor and the value's under "
                             "model.critic")
        self.actor_optimizer = self.ops.adam(actor_params, lr=self.lr, eps=self.eps, max_grad_norm=self.max_grad_norm)
        self.critic_optimizer = self.ops.adam(critic_params, lr=self.lr, eps=self.eps,
                                              max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _step(self, optimizer: Any, loss: Any) -> Any:
        """Backpropagate ``loss``, clip to ``max_grad_norm``, step; the gradients' global norm before the clip."""
        return self.ops.step(optimizer, loss, self.max_grad_norm, return_norm=True)

    # -- checkpoints: PopArt's statistics travel with the models and optimizers ----------------------------
    def state_dict(self) -> dict[str, Any]:
        """Models, optimizers and (with PopArt) ``value_normalizer``'s statistics."""
        state = super().state_dict()
        if self.value_normalizer is not None:
            state["value_normalizer"] = self.value_normalizer.statistics()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            ValueError: the checkpoint is another algorithm's, or its PopArt setting differs.
        """
        state = dict(state)
        stats = state.pop("value_normalizer", None)
        if (stats is None) != (self.value_normalizer is None):
            raise ValueError(f"checkpoint does not match MAPPO(use_popart={self._use_popart}): it was saved "
                             f"{'with' if stats is not None else 'without'} PopArt statistics; restore it into a "
                             "MAPPO built with the same use_popart")
        super().load_state_dict(state)
        if stats is not None:
            self.value_normalizer.load_statistics(stats, self.device)

    # -- policy math -----------------------------------------------------------------------------------
    def _policy(self, obs: Any, available_actions: Any) -> Any:
        out = self.model.policy(obs)
        kind = self.layout.kind
        if kind == CONTINUOUS:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError("MAPPO: model.actor.continuous_action is True, so model.policy(obs) must return "
                                 "(mean, std), each float32 [B, act_dim] (std > 0, may be [act_dim])")
            mean, std = out
            return mean, std.expand_as(mean).log()
        if kind == MULTI_DISCRETE:
            if not isinstance(out, (tuple, list)) or len(out) != len(self.layout.sizes):
                raise ValueError(f"MAPPO: model.actor.multi_discrete is True, so model.policy(obs) must return a list "
                                 f"of {len(self.layout.sizes)} logits tensors (one per entry of model.act_dim)")
            return list(out)
        if isinstance(out, (tuple, list)) or out.ndim != 2:
            raise ValueError("MAPPO: model.policy(obs) must return logits float32 [B, n_actions] for a Discrete "
                             "action space (set model.actor.multi_discrete / continuous_action for the others)")
        if available_actions is not None:
            available = self.ops.as_float(available_actions, "available_actions") != 0
            if tuple(available.shape) != tuple(out.shape):
                raise ValueError(f"MAPPO: available_actions must be bool [B, n_actions] = {tuple(out.shape)} (the "
                                 f"logits' shape), got {tuple(available.shape)}")
            out = self.ops.where(available, out, _MASKED_LOGIT)
        return out

    def _log_probs_entropy(self, params: Any, actions: Any) -> tuple[Any, Any]:
        """(log_probs float32 [B, k], per-row entropy float32 [B, 1]) of ``actions`` under ``params``."""
        ops, kind = self.ops, self.layout.kind
        if kind == CONTINUOUS:
            log_prob, entropy = ops.functional.gaussian_log_prob_entropy(params[0], params[1],
                                                                         ops.as_float(actions, "actions"))
            return log_prob.unsqueeze(1), entropy.unsqueeze(1)
        actions = ops.as_int64(actions, self.device)
        if kind == MULTI_DISCRETE:
            pairs = [ops.functional.categorical_log_prob_entropy(logits, actions[:, i])
                     for i, logits in enumerate(params)]
            return (ops.concat([p[0].unsqueeze(1) for p in pairs], 1),
                    ops.concat([p[1].unsqueeze(1) for p in pairs], 1).mean(1, keepdim=True))
        log_prob, entropy = ops.functional.categorical_log_prob_entropy(params, actions.reshape([-1]))
        return log_prob.unsqueeze(1), entropy.unsqueeze(1)

    def _draw(self, logits: Any, deterministic: bool) -> Any:
        if deterministic:
            return logits.argmax(-1, keepdim=True)
        return self.ops.categorical_sample(self.ops.F.softmax(logits, -1)).unsqueeze(-1)

    # -- PARL's interface --------------------------------------------------------------------------------
    def sample(self, cent_obs: Any, obs: Any, deterministic: bool = False, *,
               available_actions: Any = None) -> tuple[Any, Any, Any]:
        """Actions of the policy and values of the centralised critic (PARL's; there is no ``predict``: pass
        ``deterministic=True``).

        Args:
            cent_obs: float32 ``[B, cent_obs_dim]``, the critic's input (e.g. the global state).
            obs: float32 ``[B, obs_dim]``, the actor's input.
            deterministic: the most likely action (argmax; the Gaussian mean) instead of a sample.
            available_actions: bool ``[B, n_actions]`` (Discrete only), or ``None``: every action available.

        Returns:
            ``(values float32 [B, 1], actions, log_probs float32 [B, k])``; ``actions`` int64 ``[B, 1]``
            (Discrete), ``[B, k]`` (MultiDiscrete of k components) or float32 ``[B, act_dim]`` (Box, unclipped:
            clip to the space's bounds before stepping the env); k = 1 except MultiDiscrete.

        Raises:
            ValueError: shapes do not fit the model.
        """
        ops = self.ops
        args = cent_obs, obs, available_actions = ops.to_device(self.device, cent_obs, obs, available_actions)
        try:
            with ops.no_grad():
                cent_obs, obs = ops.as_float(cent_obs, "cent_obs"), ops.as_float(obs, "obs")
                check_sample_shapes(cent_obs, obs)
                params = self._policy(obs, available_actions)
                if self.layout.kind == CONTINUOUS:
                    mean, log_std = params
                    actions = mean if deterministic else mean + log_std.exp() * ops.randn_like(mean)
                elif self.layout.kind == MULTI_DISCRETE:
                    actions = ops.concat([self._draw(logits, deterministic) for logits in params], 1)
                else:
                    actions = self._draw(params, deterministic)
                log_probs, _ = self._log_probs_entropy(params, actions)
                return self.model.value(cent_obs), actions, log_probs
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "sample", err, args)
            raise

    def value(self, cent_obs: Any) -> Any:
        """The centralised critic's values float32 ``[B, 1]`` of ``cent_obs [B, cent_obs_dim]`` (PopArt-normalised
        when PopArt is on: ``value_normalizer.denormalize`` maps them to returns)."""
        ops = self.ops
        args = ops.to_device(self.device, cent_obs)
        try:
            with ops.no_grad():
                return self.model.value(ops.as_float(args[0], "cent_obs"))
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "value", err, args)
            raise

    def learn(self, share_obs: Any, obs: Any, actions: Any, value_preds: Any, returns: Any, old_log_probs: Any,
              adv_targ: Any, active_masks: Any = None, *,
              available_actions: Any = None) -> tuple[Any, Any, Any]:
        """One actor step and one critic step on one minibatch (PARL's ``learn``).

        Actor: ``policy_loss - entropy_coef * entropy`` (clipped surrogate, entropy averaged over active rows);
        critic: ``value_loss_coef * value_loss`` (clipped Huber value loss, on PopArt-normalised targets after
        the PopArt update when ``use_popart``); each with its own gradient clip and Adam.

        Args:
            share_obs: float32 ``[B, cent_obs_dim]``.
            obs: float32 ``[B, obs_dim]``.
            actions: ``[B, 1]`` indices (Discrete; ``[B]`` too), ``[B, k]`` (MultiDiscrete), float32
                ``[B, act_dim]`` (Box); integer-valued floats are accepted (PARL's buffer stores float32).
            value_preds: float32 ``[B, 1]`` the critic's outputs at collection time (normalised with PopArt).
            returns: float32 ``[B, 1]`` value targets in return units (GAE returns; PopArt normalises them here).
            old_log_probs: float32 ``[B, k]`` log-probs at collection time.
            adv_targ: float32 ``[B, 1]`` advantages (normalised by the caller, as PARL's agent does).
            active_masks: float32 ``[B, 1]``, 1 where the agent was alive, or ``None`` (all alive).
            available_actions: bool ``[B, n_actions]`` (Discrete) as given to ``sample``, or ``None``.

        Returns:
            ``(value_loss, policy_loss, dist_entropy)``, detached 0-d tensors (PARL's agents call ``.item()``).

        Raises:
            ValueError: a shape does not fit (the message names the argument), or actions out of range.
        """
        ops = self.ops
        if isinstance(actions, (list, tuple)):
            actions = np.asarray(actions)
        args = ops.to_device(self.device, share_obs, obs, actions, value_preds, returns, old_log_probs, adv_targ,
                             active_masks, available_actions)
        try:
            return self._learn(*args)
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    def _learn(self, share_obs: Any, obs: Any, actions: Any, value_preds: Any, returns: Any, old_log_probs: Any,
               adv_targ: Any, active_masks: Any, available_actions: Any) -> tuple[Any, Any, Any]:
        ops = self.ops
        share_obs, obs = ops.as_float(share_obs, "share_obs"), ops.as_float(obs, "obs")
        batch = check_learn_shapes(self.layout, share_obs, obs, actions, value_preds, returns, old_log_probs,
                                   adv_targ, active_masks, available_actions)
        if self.layout.kind == DISCRETE:
            actions = actions.reshape([batch, 1])

        def column(value: Any, name: str) -> Any:
            return ops.as_float(value, name).reshape([batch, 1])

        value_preds, returns, adv_targ = (column(value_preds, "value_preds"), column(returns, "returns"),
                                          column(adv_targ, "adv_targ"))
        old_log_probs = ops.as_float(old_log_probs, "old_log_probs")
        active_masks = None if active_masks is None else column(active_masks, "active_masks")
        self._check_action_range(actions)

        # actor: clipped surrogate and entropy bonus
        params = self._policy(obs, available_actions)
        log_probs, entropy = self._log_probs_entropy(params, actions)
        dist_entropy = masked_mean(ops, entropy, active_masks)
        policy_loss = mappo_policy_loss(ops, log_probs, old_log_probs, adv_targ, self.clip_param, active_masks)
        actor_norm = self._step(self.actor_optimizer, policy_loss - dist_entropy * self.entropy_coef)

        # critic: PopArt first (statistics, then the output layer rescaled), then the clipped Huber loss
        if self.value_normalizer is not None:
            self.value_normalizer.update(returns)
            returns = self.value_normalizer.normalize(returns)
        values = self.model.value(share_obs)
        value_loss = mappo_value_loss(ops, values, value_preds, returns, self.clip_param, self.huber_delta,
                                      active_masks if self._use_value_active_masks else None)
        critic_norm = self._step(self.critic_optimizer, value_loss * self.value_loss_coef)

        log_probs, old = log_probs.detach().reshape([-1]), old_log_probs.reshape([-1])
        stats = ops.host_floats(value_loss, policy_loss, dist_entropy, ops.functional.approx_kl(log_probs, old),
                                ops.functional.clip_fraction(log_probs, old, self.clip_param), actor_norm,
                                critic_norm)
        self.last_info = dict(zip(_INFO_KEYS, stats, strict=True))
        return value_loss.detach(), policy_loss.detach(), dist_entropy.detach()

    def _check_action_range(self, actions: Any) -> None:
        if self.layout.kind == CONTINUOUS:
            return
        values = self.ops.to_numpy(actions) if isinstance(actions, self.ops.Tensor) else np.asarray(actions)
        if np.issubdtype(values.dtype, np.floating) and not np.array_equal(values, np.round(values)):
            raise ValueError("MAPPO.learn: Discrete / MultiDiscrete actions must be integer indices, got fractional "
                             "values; for a Box action space set model.actor.continuous_action = True")
        sizes = np.asarray(self.layout.sizes)
        if (values < 0).any() or (sizes[0] > 0 and (values >= sizes).any()):
            raise ValueError(f"MAPPO.learn: action indices must lie in [0, n) per component with n = "
                             f"{self.layout.sizes} (model.act_dim), got range [{int(values.min())}, "
                             f"{int(values.max())}]")

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


# -- the training loop's arithmetic on the multi-agent batch [T, E, n_agents, ...] (numpy) --------------------


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
