"""PPO (Schulman et al. 2017, "Proximal Policy Optimization Algorithms") with PARL's ``PPO`` API:
clipped surrogate, clipped value loss, advantage normalisation, discrete and continuous actions, and
an optional approximate-KL early stop; written once for torch and paddle."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive
from parl_algorithms.algorithms._acting import act

__all__ = ["PPO"]


class PPO:
    """Proximal Policy Optimization (one minibatch per ``learn`` call; the caller loops over epochs).

    The model must define ``value(obs) -> float32 [B, 1] or [B]`` and ``policy(obs)``: for discrete
    actions the logits float32 ``[B, num_actions]``; for continuous actions ``(mean, std)``, each float32
    ``[B, act_dim]`` (std > 0, may be ``[act_dim]`` and is broadcast): PARL's contract, whose models return
    ``exp(log_std)``. A model may also define ``policy_and_value(obs) -> (policy(obs), value(obs))``:
    ``sample`` and ``learn`` then call it once instead of the two (a model that evaluates its actor and critic
    together, e.g. with ``parl_algorithms.torch.nets.BatchedMLP``, computes both in fewer ops).

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework).
        clip_param: surrogate and value clipping epsilon (> 0).
        value_loss_coef: weight of the value loss (>= 0).
        entropy_coef: weight of the entropy bonus (>= 0).
        initial_lr: Adam learning rate (> 0).
        eps: Adam epsilon.
        max_grad_norm: clip of the global gradient norm (all gradients together; PARL's paddle PPO clipped each
            tensor separately); ``None`` does not clip.
        use_clipped_value_loss: clip the value update around the old value (PARL's default).
        norm_adv: normalise advantages per minibatch.
        continuous_action: Gaussian policy over a Box action space (``True``) or categorical (``False``).
        target_kl: if set, a ``learn`` call whose approximate KL before the step exceeds it skips the
            update and sets ``kl_exceeded`` so the caller can end the epoch loop (SB3's ``target_kl``).
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        last_info: ``{"train/value_loss", "train/action_loss", "train/entropy", "train/approx_kl",
            "train/clip_fraction", "train/kl_exceeded"}`` of the last ``learn`` call.
        kl_exceeded: ``True`` once a ``learn`` call was skipped for exceeding ``target_kl``; reset it
            (``alg.kl_exceeded = False``) before the next update phase.

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``value`` or ``policy``, or a hyperparameter is out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops
    # PARL's paddle PPO draws ``dist.sample([1])``: its ``sample`` returns action and log-prob with a leading axis
    sample_axis: ClassVar[bool]

    def __init__(self, model: Any, clip_param: float = 0.1, value_loss_coef: float = 0.5,
                 entropy_coef: float = 0.01, initial_lr: float = 2.5e-4, eps: float = 1e-5,
                 max_grad_norm: float | None = 0.5, use_clipped_value_loss: bool = True, norm_adv: bool = True,
                 continuous_action: bool = False, *, target_kl: float | None = None, device: Any = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "value", "PPO")
        check_model_method(model, "policy", "PPO")
        self.clip_param = positive(clip_param, "clip_param", "PPO", "0.2")
        if value_loss_coef < 0 or entropy_coef < 0:
            raise ValueError(f"PPO: value_loss_coef ({value_loss_coef}) and entropy_coef ({entropy_coef}) must be >= 0")
        self.value_loss_coef = float(value_loss_coef)
        self.entropy_coef = float(entropy_coef)
        self.initial_lr = positive(initial_lr, "initial_lr", "PPO", "3e-4")
        self.eps = float(eps)
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "PPO", "0.5")
        self.use_clipped_value_loss = bool(use_clipped_value_loss)
        self.norm_adv = bool(norm_adv)
        self.continuous_action = bool(continuous_action)
        self.target_kl = None if target_kl is None else positive(target_kl, "target_kl", "PPO", "0.02")
        self.kl_exceeded = False
        self.optimizer = self.ops.adam(self.model.parameters(), lr=self.initial_lr, eps=self.eps,
                                       max_grad_norm=self.max_grad_norm)
        self._record_info(None)

    # -- policy math -----------------------------------------------------------------------------
    def _policy(self, obs: Any) -> tuple[Any, Any]:
        """``(logits, None)`` for discrete actions, ``(mean, log(std))`` for continuous ones."""
        return self._policy_params(self.model.policy(obs))

    def _policy_params(self, out: Any) -> tuple[Any, Any]:
        """``model.policy``'s output checked and as ``(logits, None)`` or ``(mean, log(std))``."""
        if self.continuous_action:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError("PPO(continuous_action=True) needs model.policy(obs) to return (mean, std), "
                                 "each float32 [B, act_dim] (std > 0: return log_std.exp(), as PARL's models do); "
                                 "for a Discrete action space use continuous_action=False")
            return out[0], out[1].expand_as(out[0]).log()  # PARL's contract is the std; the math uses its log
        if isinstance(out, (tuple, list)):
            raise ValueError("PPO(continuous_action=False) needs model.policy(obs) to return logits float32 "
                             "[B, num_actions], got a tuple; for a Box action space pass continuous_action=True")
        if len(out.shape) != 2:
            raise ValueError(f"PPO: model.policy(obs) must return logits [B, num_actions], got {tuple(out.shape)}")
        return out, None

    def _log_prob_entropy(self, params: tuple[Any, Any], action: Any) -> tuple[Any, Any]:
        first, log_std = params
        if log_std is None:
            return self.ops.functional.categorical_log_prob_entropy(first, action)
        return self.ops.functional.gaussian_log_prob_entropy(first, log_std, action)

    def _action(self, action: Any, params: tuple[Any, Any], batch: int) -> Any:
        if self.continuous_action:
            return self.ops.continuous_actions(action, batch, "PPO", params[0].shape[-1])
        return self.ops.discrete_actions(action, batch, params[0].shape[-1], "PPO")

    def _value(self, obs: Any) -> Any:
        return self._value_column(self.model.value(obs))

    def _policy_and_value(self, obs: Any) -> tuple[tuple[Any, Any], Any]:
        """``(_policy(obs), _value(obs))``, in one model call where the model defines ``policy_and_value``."""
        joint = getattr(self.model, "policy_and_value", None)
        if joint is not None:
            out, value = joint(obs)
            return self._policy_params(out), self._value_column(value)
        return self._policy(obs), self._value(obs)

    @staticmethod
    def _value_column(value: Any) -> Any:
        if len(value.shape) == 2 and value.shape[1] == 1:
            value = value.squeeze(1)
        if len(value.shape) != 1:
            raise ValueError(f"PPO: model.value(obs) must return float32 [B, 1] or [B], got {tuple(value.shape)}")
        return value

    # -- PARL's interface ------------------------------------------------------------------------
    def value(self, obs: Any) -> Any:
        """State values.

        Args:
            obs: float32 ``[B, *obs_shape]`` (or one vector observation ``[obs_dim]``).

        Returns:
            float32 ``[B, 1]`` (as PARL's models return; ``[1]`` for one observation).
        """
        return act(self, "value", obs, lambda x: self._value(x).unsqueeze(1))

    def _sample(self, obs: Any) -> tuple[Any, Any, Any, Any]:
        params, value = self._policy_and_value(obs)
        first, log_std = params
        if log_std is None:
            action = self.ops.categorical_sample(self.ops.F.softmax(first, -1))
        else:
            action = first + log_std.exp() * self.ops.randn_like(first)
        log_prob, entropy = self._log_prob_entropy(params, action)
        return value.unsqueeze(1), action, log_prob, entropy

    def sample(self, obs: Any) -> tuple[Any, Any, Any, Any]:
        """Sample actions for data collection (PARL's return order).

        Args:
            obs: float32 ``[B, *obs_shape]`` (or one vector observation ``[obs_dim]``).

        Returns:
            ``(value [B, 1], action, log_prob [B], entropy [B])``; ``action`` is int64 ``[B]`` (discrete)
            or float32 ``[B, act_dim]`` (continuous, unclipped). On paddle, as PARL's paddle PPO (which draws
            ``dist.sample([1])``), ``action`` and ``log_prob`` carry a leading sample axis of 1 (``[1, B]``,
            ``[1, B, act_dim]``); PARL's paddle agents take ``[0]`` of both.
        """
        value, action, log_prob, entropy = act(self, "sample", obs, self._sample)
        if self.sample_axis:
            return value, action.unsqueeze(0), log_prob.unsqueeze(0), entropy
        return value, action, log_prob, entropy

    def predict(self, obs: Any) -> Any:
        """Deterministic actions: the Gaussian mean (continuous) or ``argmax`` of the logits (discrete).

        Args:
            obs: float32 ``[B, *obs_shape]`` (or one vector observation ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]`` or int64 ``[B]``.
        """
        return act(self, "predict", obs, self._predict)

    def _predict(self, obs: Any) -> Any:
        first, log_std = self._policy(obs)
        return first if log_std is not None else first.argmax(-1)

    def learn(self, batch_obs: Any, batch_action: Any, batch_value: Any, batch_return: Any, batch_logprob: Any,
              batch_adv: Any, lr: float | None = None) -> tuple[float, float, float]:
        """One Adam step on one minibatch.

        ``loss = value_loss_coef * value_loss + action_loss - entropy_coef * entropy``.

        Args:
            batch_obs: float32 ``[B, *obs_shape]``.
            batch_action: int64 ``[B]`` (discrete) or float32 ``[B, act_dim]`` (continuous).
            batch_value: float32 ``[B]`` / ``[B, 1]`` values at collection time.
            batch_return: float32 ``[B]`` / ``[B, 1]`` value targets (e.g. GAE returns).
            batch_logprob: float32 ``[B]`` / ``[B, 1]`` log-probs at collection time.
            batch_adv: float32 ``[B]`` / ``[B, 1]`` advantages.
            lr: if given, set the optimizer's learning rate first (annealing).

        Returns:
            ``(value_loss, action_loss, entropy)`` as Python floats (PARL's return); more in
            ``last_info``.

        Raises:
            ValueError: shapes do not fit, or the actions do not match ``continuous_action`` (or, continuous, the
                policy's ``act_dim``).
        """
        ops, functional = self.ops, self.ops.functional
        args = ops.to_device(self.device, batch_obs, batch_action, batch_value, batch_return, batch_logprob,
                             batch_adv)
        try:
            batch_obs, batch_action, batch_value, batch_return, batch_logprob, batch_adv = args
            obs = ops.obs_batch(batch_obs, "PPO")
            batch = obs.shape[0]
            old_value = ops.column(batch_value, "batch_value", batch, "PPO")
            returns = ops.column(batch_return, "batch_return", batch, "PPO")
            old_log_prob = ops.column(batch_logprob, "batch_logprob", batch, "PPO")
            adv = ops.column(batch_adv, "batch_adv", batch, "PPO")
            params, value = self._policy_and_value(obs)
            action = self._action(batch_action, params, batch)
            log_prob, entropy = self._log_prob_entropy(params, action)
            if self.norm_adv:
                adv = functional.normalize_advantages(adv)
            action_loss = functional.clipped_surrogate_loss(log_prob, old_log_prob, adv, self.clip_param)
            value_loss = functional.clipped_value_loss(value, old_value, returns,
                                                       self.clip_param if self.use_clipped_value_loss else None)
            entropy_mean = entropy.mean()
            log_prob_now = log_prob.detach()
            kl = None  # computed here only for the early stop; otherwise with the diagnostics
            if self.target_kl is not None:
                (kl,) = ops.host_floats(functional.approx_kl(log_prob_now, old_log_prob))
            skip = kl is not None and kl > self.target_kl
            if skip:
                self.kl_exceeded = True
            else:
                # (a weight of 1 or 0 adds no op: the same loss and gradients, with fewer nodes for backward to walk)
                loss = (value_loss if self.value_loss_coef == 1.0 else self.value_loss_coef * value_loss) + action_loss
                if self.entropy_coef != 0.0:
                    loss = loss - self.entropy_coef * entropy_mean
                if lr is not None:
                    ops.set_lr(self.optimizer, lr)
                ops.step(self.optimizer, loss, self.max_grad_norm)
            result = ops.host_floats(value_loss, action_loss, entropy_mean)  # PARL's three floats
            # a partial of a classmethod, not a tuple: its tensors are not algorithm state (checkpoints skip it)
            self._record_info(functools.partial(self._info, result, log_prob_now, old_log_prob, self.clip_param,
                                                kl, skip))
            return result
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    @classmethod
    def _info(cls, result: tuple[float, float, float], log_prob: Any, old_log_prob: Any, clip_param: float,
              kl: float | None, skip: bool) -> dict[str, float]:
        functional = cls.ops.functional
        clipfrac = functional.clip_fraction(log_prob, old_log_prob, clip_param)
        if kl is None:  # both in one device -> host copy
            kl, clipfrac = cls.ops.host_floats(functional.approx_kl(log_prob, old_log_prob), clipfrac)
        else:
            (clipfrac,) = cls.ops.host_floats(clipfrac)
        return {"train/value_loss": result[0], "train/action_loss": result[1], "train/entropy": result[2],
                "train/approx_kl": kl, "train/clip_fraction": clipfrac, "train/kl_exceeded": float(skip)}

    def _record_info(self, pending: Any) -> None:
        """Keep the diagnostics of a ``learn`` call (``pending()`` computes them; ``None`` before the first):
        the backend's class decides when they are computed."""
        raise NotImplementedError

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
