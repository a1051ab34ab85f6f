"""MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") and PopArt
(van Hasselt et al. 2016, "Learning values across many orders of magnitude") on PaddlePaddle, with the API of
PARL's torch ``MAPPO`` (PARL 2.2.1 had no paddle MAPPO). Same math as :mod:`parl_algorithms.torch.mappo`, whose
docstrings hold the details; checks and batch layout are shared in ``parl_algorithms._mappo``."""

from __future__ import annotations

from typing import Any

import numpy as np
import paddle

from parl_algorithms import _mappo
from parl_algorithms.paddle import functional, marl_functional
from parl_algorithms.paddle._common import adam, grad_norm, readable_shape_errors
from parl_core.paddle import Algorithm, Model

__all__ = ["MAPPO", "PopArt"]

_MASKED_LOGIT = -1e10


def _tensor(value: Any, dtype: str | None = "float32") -> paddle.Tensor:
    """A paddle tensor of a numpy array / list / tensor (``dtype=None`` keeps integer dtypes)."""
    if not isinstance(value, paddle.Tensor):
        value = paddle.to_tensor(np.asarray(value))
    if dtype is not None and value.dtype != getattr(paddle, dtype):
        value = value.astype(dtype)
    return value


class PopArt(paddle.nn.Layer):
    """PopArt value normalisation of a critic's output layer (the torch ``PopArt``'s API and math).

    Args:
        weight: the output Linear's weight ``[hidden, 1]`` (paddle's layout), rescaled in place.
        bias: its bias ``[1]``, rescaled in place.
        norm_axes: leading axes of a target batch that are averaged.
        beta: the statistics' decay (0.99999).
        epsilon: floor of the debiasing term.

    Raises:
        ValueError: an argument out of range.
    """

    def __init__(self, weight: paddle.Tensor, bias: paddle.Tensor, norm_axes: int = 1, beta: float = 0.99999,
                 epsilon: float = 1e-5) -> None:
        super().__init__()
        hp = _mappo.popart_hyperparameters(norm_axes, beta, epsilon)
        self.norm_axes, self.beta, self.epsilon = hp["norm_axes"], hp["beta"], hp["epsilon"]
        self.__dict__["weight"], self.__dict__["bias"] = weight, bias  # the critic's, not this layer's
        output_shape = int(bias.shape[0]) if bias is not None and bias.ndim else 1
        self.register_buffer("mean", paddle.zeros([output_shape], dtype="float32"))
        self.register_buffer("mean_sq", paddle.zeros([output_shape], dtype="float32"))
        self.register_buffer("debiasing_term", paddle.zeros([], dtype="float32"))

    def reset_parameters(self) -> None:
        """Zero the statistics."""
        for buffer in (self.mean, self.mean_sq, self.debiasing_term):
            buffer.set_value(paddle.zeros_like(buffer))

    @property
    def stddev(self) -> paddle.Tensor:
        """The debiased standard deviation float32 ``[1]``."""
        return paddle.sqrt(self.debiased_mean_var()[1])

    @paddle.no_grad()
    def update(self, input_vector: Any) -> None:
        """Fold a batch of unnormalised targets ``[B, 1]`` into the statistics and rescale the output layer."""
        batch = _tensor(input_vector)
        old_mean, old_var = self.debiased_mean_var()
        new_stats = marl_functional.popart_update(self.mean, self.mean_sq, self.debiasing_term, batch, self.beta,
                                                  self.norm_axes)
        for buffer, value in zip((self.mean, self.mean_sq, self.debiasing_term), new_stats, strict=True):
            buffer.set_value(value)
        new_mean, new_var = self.debiased_mean_var()
        weight, bias = marl_functional.popart_preserve_outputs(self.weight, self.bias, old_mean, paddle.sqrt(old_var),
                                                               new_mean, paddle.sqrt(new_var))
        self.weight.set_value(weight)
        self.bias.set_value(bias)

    def debiased_mean_var(self) -> tuple[paddle.Tensor, paddle.Tensor]:
        """``(mu [1], sigma^2 [1])``, bias-corrected, the variance floored at 1e-2."""
        return marl_functional.popart_debiased_mean_var(self.mean, self.mean_sq, self.debiasing_term, self.epsilon)

    def normalize(self, input_vector: Any) -> paddle.Tensor:
        """``(y - mu) / sigma``, a float32 tensor of the input's shape."""
        mean, var = self.debiased_mean_var()
        return (_tensor(input_vector) - mean) / paddle.sqrt(var)

    def denormalize(self, input_vector: Any) -> np.ndarray:
        """``x sigma + mu`` as a float32 numpy array (as PARL's)."""
        mean, var = self.debiased_mean_var()
        with paddle.no_grad():
            return (_tensor(input_vector) * paddle.sqrt(var) + mean).numpy()


class MAPPO(Algorithm):
    """Multi-Agent PPO with a centralised value function: the torch ``MAPPO``'s constructor, methods, shapes and
    differences from PARL, on paddle (``model`` a ``parl_core.paddle.Model``; ``model.critic.v_out`` a
    ``paddle.nn.Linear(hidden, 1)``). The gradient clip is ``ClipGradByGlobalNorm`` of each optimizer's
    parameters (the torch twin's ``clip_grad_norm_``).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks a part of the contract, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, clip_param: float, value_loss_coef: float, entropy_coef: float,
                 initial_lr: float, huber_delta: float, eps: float | None = None, max_grad_norm: float | None = None,
                 use_popart: bool = True, use_value_active_masks: bool = True, *, device: str | None = None) -> None:
        hp = _mappo.mappo_hyperparameters(clip_param, value_loss_coef, entropy_coef, initial_lr, huber_delta, eps,
                                          max_grad_norm)
        super().__init__(model, device=device)
        self.layout = _mappo.model_action_layout(model, bool(use_popart))
        self.multi_discrete = self.layout.kind == _mappo.MULTI_DISCRETE
        self.continuous_action = self.layout.kind == _mappo.CONTINUOUS
        self.clip_param, self.value_loss_coef = hp["clip_param"], hp["value_loss_coef"]
        self.entropy_coef, self.lr, self.huber_delta = hp["entropy_coef"], hp["initial_lr"], hp["huber_delta"]
        self.eps, self.max_grad_norm = hp["eps"], hp["max_grad_norm"]
        self._use_popart, self._use_value_active_masks = bool(use_popart), bool(use_value_active_masks)
        if self._use_popart:
            v_out = self.model.critic.v_out
            if not isinstance(v_out, paddle.nn.Linear) or v_out.weight.shape[-1] != 1 or v_out.bias is None:
                raise ValueError(f"MAPPO(use_popart=True): model.critic.v_out must be a paddle.nn.Linear(hidden, 1) "
                                 f"with a bias, got {v_out!r}; or pass use_popart=False")
            self.value_normalizer: PopArt | None = PopArt(v_out.weight, v_out.bias)
        else:
            self.value_normalizer = None
        actor_params = list(self.model.actor.parameters())
        critic_params = list(self.model.critic.parameters())
        if not actor_params or not critic_params:
            raise ValueError("MAPPO: model.actor and model.critic must each hold parameters (the two optimizers' "
                             "parameters); put the policy's layers under model.actor and the value's under "
                             "model.critic")
        self.actor_optimizer = adam(actor_params, lr=self.lr, eps=self.eps, max_grad_norm=self.max_grad_norm)
        self.critic_optimizer = adam(critic_params, lr=self.lr, eps=self.eps, max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    # -- checkpoints ---------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Models, optimizers and (with PopArt) ``value_normalizer``'s statistics."""
        state = super().state_dict()
        if self.value_normalizer is not None:
            state["value_normalizer"] = {k: v.numpy().copy() for k, v in self.value_normalizer.state_dict().items()}
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
            for key, value in stats.items():
                getattr(self.value_normalizer, key).set_value(
                    value.numpy() if isinstance(value, paddle.Tensor) else np.asarray(value))

    # -- policy math -----------------------------------------------------------------------------------
    def _policy(self, obs: paddle.Tensor, available_actions: Any) -> Any:
        out = self.model.policy(obs)
        kind = self.layout.kind
        if kind == _mappo.CONTINUOUS:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError("MAPPO: model.actor.continuous_action is True, so model.policy(obs) must return "
                                 "(mean, std), each float32 [B, act_dim] (std > 0, may be [act_dim])")
            mean, std = out
            return mean, std.expand_as(mean).log()
        if kind == _mappo.MULTI_DISCRETE:
            if not isinstance(out, (tuple, list)) or len(out) != len(self.layout.sizes):
                raise ValueError(f"MAPPO: model.actor.multi_discrete is True, so model.policy(obs) must return a list "
                                 f"of {len(self.layout.sizes)} logits tensors (one per entry of model.act_dim)")
            return list(out)
        if isinstance(out, (tuple, list)) or out.ndim != 2:
            raise ValueError("MAPPO: model.policy(obs) must return logits float32 [B, n_actions] for a Discrete "
                             "action space (set model.actor.multi_discrete / continuous_action for the others)")
        if available_actions is not None:
            available_actions = _tensor(available_actions, None).astype("bool")
            if tuple(available_actions.shape) != tuple(out.shape):
                raise ValueError(f"MAPPO: available_actions must be bool [B, n_actions] = {tuple(out.shape)} (the "
                                 f"logits' shape), got {tuple(available_actions.shape)}")
            out = paddle.where(available_actions, out, paddle.full_like(out, _MASKED_LOGIT))
        return out

    def _log_probs_entropy(self, params: Any, actions: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        kind = self.layout.kind
        if kind == _mappo.CONTINUOUS:
            log_prob, entropy = functional.gaussian_log_prob_entropy(params[0], params[1], actions.astype("float32"))
            return log_prob.unsqueeze(1), entropy.unsqueeze(1)
        actions = actions.astype("int64")
        if kind == _mappo.MULTI_DISCRETE:
            pairs = [functional.categorical_log_prob_entropy(logits, actions[:, i]) for i, logits in enumerate(params)]
            return (paddle.stack([p[0] for p in pairs], 1),
                    paddle.stack([p[1] for p in pairs], 1).mean(axis=1, keepdim=True))
        log_prob, entropy = functional.categorical_log_prob_entropy(params, actions.reshape([-1]))
        return log_prob.unsqueeze(1), entropy.unsqueeze(1)

    @staticmethod
    def _draw(logits: paddle.Tensor, deterministic: bool) -> paddle.Tensor:
        if deterministic:
            return logits.argmax(axis=-1, keepdim=True)
        return paddle.multinomial(paddle.nn.functional.softmax(logits, axis=-1), 1)

    # -- PARL's interface --------------------------------------------------------------------------------
    @readable_shape_errors
    @paddle.no_grad()
    def sample(self, cent_obs: Any, obs: Any, deterministic: bool = False, *,
               available_actions: Any = None) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """``(values float32 [B, 1], actions, log_probs float32 [B, k])`` (see the torch ``MAPPO.sample``)."""
        cent_obs, obs = _tensor(cent_obs), _tensor(obs)
        _mappo.check_sample_shapes(cent_obs, obs)
        params = self._policy(obs, available_actions)
        if self.layout.kind == _mappo.CONTINUOUS:
            mean, log_std = params
            actions = mean if deterministic else mean + paddle.exp(log_std) * paddle.randn(mean.shape, mean.dtype)
        elif self.layout.kind == _mappo.MULTI_DISCRETE:
            actions = paddle.concat([self._draw(logits, deterministic) for logits in params], axis=1)
        else:
            actions = self._draw(params, deterministic)
        log_probs, _ = self._log_probs_entropy(params, actions)
        return self.model.value(cent_obs), actions, log_probs

    @readable_shape_errors
    @paddle.no_grad()
    def value(self, cent_obs: Any) -> paddle.Tensor:
        """The centralised critic's values float32 ``[B, 1]`` (PopArt-normalised when PopArt is on)."""
        return self.model.value(_tensor(cent_obs))

    @readable_shape_errors
    def learn(self, share_obs: Any, obs: Any, actions: Any, value_preds: Any, returns: Any, old_log_probs: Any,
              adv_targ: Any, active_masks: Any = None, *,
              available_actions: Any = None) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
        """One actor step and one critic step on one minibatch (see the torch ``MAPPO.learn``).

        Returns:
            ``(value_loss, policy_loss, dist_entropy)``, detached 0-d tensors.
        """
        share_obs, obs = _tensor(share_obs), _tensor(obs)
        actions = _tensor(actions, None)
        batch = _mappo.check_learn_shapes(self.layout, share_obs, obs, actions, value_preds, returns, old_log_probs,
                                          adv_targ, active_masks, available_actions)
        if self.layout.kind == _mappo.DISCRETE:
            actions = actions.reshape([batch, 1])
        column = lambda x: _tensor(x).reshape([batch, 1])  # noqa: E731
        value_preds, returns, adv_targ = column(value_preds), column(returns), column(adv_targ)
        old_log_probs = _tensor(old_log_probs)
        active_masks = None if active_masks is None else column(active_masks)
        self._check_action_range(actions)

        params = self._policy(obs, available_actions)
        log_probs, entropy = self._log_probs_entropy(params, actions)
        dist_entropy = marl_functional.masked_mean(entropy, active_masks)
        policy_loss = marl_functional.mappo_policy_loss(log_probs, old_log_probs, adv_targ, self.clip_param,
                                                        active_masks)
        self.actor_optimizer.clear_grad()
        (policy_loss - dist_entropy * self.entropy_coef).backward()
        actor_norm = grad_norm(self.actor_optimizer)
        self.actor_optimizer.step()

        if self.value_normalizer is not None:
            self.value_normalizer.update(returns)
            returns = self.value_normalizer.normalize(returns)
        values = self.model.value(share_obs)
        value_loss = marl_functional.mappo_value_loss(
            values, value_preds, returns, self.clip_param, self.huber_delta,
            active_masks if self._use_value_active_masks else None)
        self.critic_optimizer.clear_grad()
        (value_loss * self.value_loss_coef).backward()
        critic_norm = grad_norm(self.critic_optimizer)
        self.critic_optimizer.step()

        log_probs = log_probs.detach().reshape([-1])
        old = old_log_probs.reshape([-1])
        stats = paddle.stack([value_loss.detach(), policy_loss.detach(), dist_entropy.detach(),
                              functional.approx_kl(log_probs, old),
                              functional.clip_fraction(log_probs, old, self.clip_param),
                              actor_norm.astype("float32"), critic_norm.astype("float32")]).tolist()
        self.last_info = dict(zip(("train/value_loss", "train/policy_loss", "train/entropy", "train/approx_kl",
                                   "train/clip_fraction", "train/actor_grad_norm", "train/critic_grad_norm"), stats,
                                  strict=True))
        return value_loss.detach(), policy_loss.detach(), dist_entropy.detach()

    def _check_action_range(self, actions: paddle.Tensor) -> None:
        if self.layout.kind == _mappo.CONTINUOUS:
            return
        values = actions.numpy()
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
