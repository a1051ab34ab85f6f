"""MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") and PopArt
(van Hasselt et al. 2016, "Learning values across many orders of magnitude") with PARL 2.2.1's API
(``parl/algorithms/torch/mappo.py``): a centralised critic, the clipped Huber value loss with value active
masks, PopArt value normalisation, separate Adam optimizers for actor and critic; Discrete, MultiDiscrete and
Box actions; one model per agent or one shared by all (the caller flattens agents into the batch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from parl_algorithms import _mappo
from parl_algorithms.torch import functional, marl_functional
from parl_algorithms.torch._common import adam, clip_grad_norm, optimizer_params, readable_shape_errors
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device, to_device

__all__ = ["MAPPO", "PopArt"]

_MASKED_LOGIT = -1e10  # unavailable actions' logits (the MAPPO repo's value)


class PopArt(torch.nn.Module):
    """PopArt value normalisation for a critic's output layer (PARL's ``PopArt``, from the MAPPO repo's
    ``onpolicy/algorithms/utils/popart.py``).

    Keeps bias-corrected running moments of the value targets; :meth:`update` folds a batch of returns into them
    and rescales the critic's output layer so that its unnormalised predictions are preserved; the critic is
    trained on :meth:`normalize` d targets and its outputs are mapped back with :meth:`denormalize`.

    Args:
        weight: the output layer's weight ``[1, hidden]`` (``model.critic.v_out.weight``), rescaled in place.
        bias: the output layer's bias ``[1]``, rescaled in place.
        norm_axes: the leading axes of a target batch that are averaged (1: ``[B, 1]``).
        beta: the statistics' decay (PARL: 0.99999, a horizon of ~1e5 batches).
        epsilon: floor of the debiasing term.
        device: where the statistics live; default the weight's device.

    Attributes:
        mean, mean_sq: float32 ``[1]`` running first and second moments (biased towards 0 early on).
        debiasing_term: float32 0-d, ``1 - beta^updates``.

    Raises:
        ValueError: ``norm_axes``, ``beta`` or ``epsilon`` out of range.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, norm_axes: int = 1, beta: float = 0.99999,
                 epsilon: float = 1e-5, *, device: DeviceLike = None) -> None:
        super().__init__()
        hp = _mappo.popart_hyperparameters(norm_axes, beta, epsilon)
        self.norm_axes, self.beta, self.epsilon = hp["norm_axes"], hp["beta"], hp["epsilon"]
        # the critic owns these parameters: kept as plain references (not this module's), rescaled in place
        self.__dict__["weight"], self.__dict__["bias"] = weight, bias
        device = weight.device if device is None else torch.device(device)
        output_shape = int(bias.shape[0]) if bias is not None and bias.ndim else 1
        self.register_buffer("mean", torch.zeros(output_shape, device=device))
        self.register_buffer("mean_sq", torch.zeros(output_shape, device=device))
        self.register_buffer("debiasing_term", torch.tensor(0.0, device=device))

    def reset_parameters(self) -> None:
        """Zero the statistics (PARL's)."""
        self.mean.zero_()
        self.mean_sq.zero_()
        self.debiasing_term.zero_()

    @property
    def stddev(self) -> torch.Tensor:
        """The debiased standard deviation float32 ``[1]`` (PARL kept a ``stddev`` tensor that stayed 1)."""
        return torch.sqrt(self.debiased_mean_var()[1])

    def _tensor(self, value: Any) -> torch.Tensor:
        return to_device(np.asarray(value, dtype=np.float32) if not isinstance(value, torch.Tensor) else value,
                         self.mean.device).to(torch.float32)

    @torch.no_grad()
    def update(self, input_vector: Any) -> None:
        """Fold a batch of targets into the statistics and rescale the output layer (PopArt's "ART" then "POP").

        Args:
            input_vector: float32 ``[B, 1]`` unnormalised value targets (numpy or tensor).
        """
        batch = self._tensor(input_vector)
        old_mean, old_var = self.debiased_mean_var()
        new_stats = marl_functional.popart_update(self.mean, self.mean_sq, self.debiasing_term, batch, self.beta,
                                                  self.norm_axes)
        for buffer, value in zip((self.mean, self.mean_sq, self.debiasing_term), new_stats, strict=True):
            buffer.copy_(value)
        new_mean, new_var = self.debiased_mean_var()
        weight, bias = marl_functional.popart_preserve_outputs(self.weight, self.bias, old_mean, old_var.sqrt(),
                                                               new_mean, new_var.sqrt())
        self.weight.copy_(weight)
        self.bias.copy_(bias)

    def debiased_mean_var(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mu [1], sigma^2 [1])``, bias-corrected, the variance floored at 1e-2 (PARL's)."""
        return marl_functional.popart_debiased_mean_var(self.mean, self.mean_sq, self.debiasing_term, self.epsilon)

    def normalize(self, input_vector: Any) -> torch.Tensor:
        """``(y - mu) / sigma``: float32 tensor of ``input_vector``'s shape, on the statistics' device."""
        x = self._tensor(input_vector)
        mean, var = self.debiased_mean_var()
        index = (None,) * self.norm_axes
        return (x - mean[index]) / torch.sqrt(var)[index]

    def denormalize(self, input_vector: Any) -> np.ndarray:
        """``x sigma + mu`` as a float32 numpy array (PARL returns numpy: its agents call it on buffer arrays)."""
        x = self._tensor(input_vector)
        mean, var = self.debiased_mean_var()
        index = (None,) * self.norm_axes
        with torch.no_grad():
            return (x * torch.sqrt(var)[index] + mean[index]).cpu().numpy()


class MAPPO(Algorithm):
    """Multi-Agent PPO with a centralised value function (PARL's ``MAPPO``).

    The model (PARL's contract; see ``_mappo.model_action_layout``): ``model.actor`` and ``model.critic``
    (sub-modules, one Adam each), ``model.critic.v_out`` (the output Linear PopArt rescales),
    ``model.policy(obs)`` -> logits ``[B, n]`` (Discrete), a list of logits (MultiDiscrete, with
    ``model.actor.multi_discrete = True`` and ``model.act_dim`` the list of sizes) or ``(mean, std)`` each
    ``[B, act_dim]`` (Box, with ``model.actor.continuous_action = True``; the std may be ``[act_dim]``), and
    ``model.value(cent_obs)`` -> ``[B, 1]``. For a Box the std parameters must belong to ``model.actor``.

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
        model: the actor-critic model described above.
        clip_param: the PPO ratio clip and the value clip epsilon (0.2).
        value_loss_coef: weight of the value loss (1).
        entropy_coef: weight of the entropy bonus (0.01).
        initial_lr: both optimizers' learning rate (7e-4).
        huber_delta: Huber loss delta of the value loss (10).
        eps: Adam's epsilon (None: 1e-5).
        max_grad_norm: global gradient-norm clip of actor and critic separately (10; None: no clip).
        use_popart: normalise value targets with :class:`PopArt` (``self.value_normalizer``; else ``None``).
        use_value_active_masks: average the value loss over active rows only.
        device: ``"cpu"``, ``"cuda"``, ... (default CUDA when available, PARL's rule).

    Attributes:
        value_normalizer: the :class:`PopArt` of ``model.critic.v_out``, or ``None``.
        actor_optimizer, critic_optimizer: the two Adams.
        last_info: ``{"train/value_loss", "train/policy_loss", "train/entropy", "train/approx_kl",
            "train/clip_fraction", "train/actor_grad_norm", "train/critic_grad_norm"}`` of the last ``learn``.

    Raises:
        ValueError: the model lacks a part of the contract, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, clip_param: float, value_loss_coef: float, entropy_coef: float,
                 initial_lr: float, huber_delta: float, eps: float | None = None, max_grad_norm: float | None = None,
                 use_popart: bool = True, use_value_active_masks: bool = True, *, device: DeviceLike = None) -> None:
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
            if not isinstance(v_out, torch.nn.Linear) or v_out.out_features != 1 or v_out.bias is None:
                raise ValueError(f"MAPPO(use_popart=True): model.critic.v_out must be a torch.nn.Linear(hidden, 1) "
                                 f"with a bias, got {v_out!r}; or pass use_popart=False")
            self.value_normalizer: PopArt | None = PopArt(v_out.weight, v_out.bias, device=self.device)
        else:
            self.value_normalizer = None
        actor_params = list(self.model.actor.parameters())
        critic_params = list(self.model.critic.parameters())
        if not actor_params or not critic_params:
            raise ValueError("MAPPO: model.actor and model.critic must each hold parameters (the two optimizers' "
                             "parameters); put the policy's layers under model.actor and the value's under "
                             "model.critic")
        self.actor_optimizer = adam(actor_params, lr=self.lr, eps=self.eps)
        self.critic_optimizer = adam(critic_params, lr=self.lr, eps=self.eps)
        self.last_info: dict[str, float] = {}

    # -- checkpoints: PopArt's statistics travel with the models and optimizers ----------------------------
    def state_dict(self) -> dict[str, Any]:
        """Models, optimizers and (with PopArt) ``value_normalizer``'s statistics."""
        state = super().state_dict()
        if self.value_normalizer is not None:
            state["value_normalizer"] = {k: v.detach().clone() for k, v in self.value_normalizer.state_dict().items()}
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
            self.value_normalizer.load_state_dict({k: v.to(self.device) for k, v in stats.items()})

    # -- policy math -----------------------------------------------------------------------------------
    def _policy(self, obs: torch.Tensor, available_actions: torch.Tensor | None) -> Any:
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
            if tuple(available_actions.shape) != tuple(out.shape):
                raise ValueError(f"MAPPO: available_actions must be bool [B, n_actions] = {tuple(out.shape)} (the "
                                 f"logits' shape), got {tuple(available_actions.shape)}")
            out = out.masked_fill(available_actions == 0, _MASKED_LOGIT)
        return out

    def _log_probs_entropy(self, params: Any, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(log_probs float32 [B, k], per-row entropy float32 [B, 1]) of ``actions`` under ``params``."""
        kind = self.layout.kind
        if kind == _mappo.CONTINUOUS:
            log_prob, entropy = functional.gaussian_log_prob_entropy(params[0], params[1], actions.float())
            return log_prob.unsqueeze(1), entropy.unsqueeze(1)
        if kind == _mappo.MULTI_DISCRETE:
            pairs = [functional.categorical_log_prob_entropy(logits, actions[:, i].long())
                     for i, logits in enumerate(params)]
            return (torch.stack([p[0] for p in pairs], 1),
                    torch.stack([p[1] for p in pairs], 1).mean(dim=1, keepdim=True))
        log_prob, entropy = functional.categorical_log_prob_entropy(params, actions.reshape(-1).long())
        return log_prob.unsqueeze(1), entropy.unsqueeze(1)

    @staticmethod
    def _draw(logits: torch.Tensor, deterministic: bool) -> torch.Tensor:
        if deterministic:
            return logits.argmax(dim=-1, keepdim=True)
        return torch.multinomial(torch.softmax(logits, dim=-1), 1)

    # -- PARL's interface --------------------------------------------------------------------------------
    @on_device
    @readable_shape_errors
    @torch.no_grad()
    def sample(self, cent_obs: torch.Tensor, obs: torch.Tensor, deterministic: bool = False, *,
               available_actions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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
        _mappo.check_sample_shapes(cent_obs, obs)
        params = self._policy(obs.float(), available_actions)
        if self.layout.kind == _mappo.CONTINUOUS:
            mean, log_std = params
            actions = mean if deterministic else mean + torch.exp(log_std) * torch.randn_like(mean)
        elif self.layout.kind == _mappo.MULTI_DISCRETE:
            actions = torch.cat([self._draw(logits, deterministic) for logits in params], dim=1)
        else:
            actions = self._draw(params, deterministic)
        log_probs, _ = self._log_probs_entropy(params, actions)
        return self.model.value(cent_obs.float()), actions, log_probs

    @on_device
    @readable_shape_errors
    @torch.no_grad()
    def value(self, cent_obs: torch.Tensor) -> torch.Tensor:
        """The centralised critic's values float32 ``[B, 1]`` of ``cent_obs [B, cent_obs_dim]`` (PopArt-normalised
        when PopArt is on: ``value_normalizer.denormalize`` maps them to returns)."""
        return self.model.value(cent_obs.float())

    @on_device
    @readable_shape_errors
    def learn(self, share_obs: torch.Tensor, obs: torch.Tensor, actions: torch.Tensor, value_preds: torch.Tensor,
              returns: torch.Tensor, old_log_probs: torch.Tensor, adv_targ: torch.Tensor,
              active_masks: torch.Tensor | None = None, *,
              available_actions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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
        batch = _mappo.check_learn_shapes(self.layout, share_obs, obs, actions, value_preds, returns, old_log_probs,
                                          adv_targ, active_masks, available_actions)
        if self.layout.kind == _mappo.DISCRETE:
            actions = actions.reshape(batch, 1)
        column = lambda x: x.reshape(batch, 1).float()  # noqa: E731
        value_preds, returns, adv_targ = column(value_preds), column(returns), column(adv_targ)
        active_masks = None if active_masks is None else column(active_masks)
        self._check_action_range(actions)

        # actor: clipped surrogate and entropy bonus
        params = self._policy(obs.float(), available_actions)
        log_probs, entropy = self._log_probs_entropy(params, actions)
        dist_entropy = marl_functional.masked_mean(entropy, active_masks)
        policy_loss = marl_functional.mappo_policy_loss(log_probs, old_log_probs.float(), adv_targ, self.clip_param,
                                                        active_masks)
        self.actor_optimizer.zero_grad()
        (policy_loss - dist_entropy * self.entropy_coef).backward()
        actor_norm = self._clip(self.actor_optimizer)
        self.actor_optimizer.step()

        # critic: PopArt first (statistics, then the output layer rescaled), then the clipped Huber loss
        if self.value_normalizer is not None:
            self.value_normalizer.update(returns)
            returns = self.value_normalizer.normalize(returns)
        values = self.model.value(share_obs.float())
        value_loss = marl_functional.mappo_value_loss(
            values, value_preds, returns, self.clip_param, self.huber_delta,
            active_masks if self._use_value_active_masks else None)
        self.critic_optimizer.zero_grad()
        (value_loss * self.value_loss_coef).backward()
        critic_norm = self._clip(self.critic_optimizer)
        self.critic_optimizer.step()

        log_probs = log_probs.detach()
        old = old_log_probs.float()
        stats = torch.stack([value_loss.detach(), policy_loss.detach(), dist_entropy.detach(),
                             functional.approx_kl(log_probs.reshape(-1), old.reshape(-1)),
                             functional.clip_fraction(log_probs.reshape(-1), old.reshape(-1), self.clip_param),
                             actor_norm.detach().float(), critic_norm.detach().float()]).tolist()
        self.last_info = dict(zip(("train/value_loss", "train/policy_loss", "train/entropy", "train/approx_kl",
                                   "train/clip_fraction", "train/actor_grad_norm", "train/critic_grad_norm"), stats,
                                  strict=True))
        return value_loss.detach(), policy_loss.detach(), dist_entropy.detach()

    def _clip(self, optimizer: torch.optim.Optimizer) -> torch.Tensor:
        params = optimizer_params(optimizer)
        if self.max_grad_norm is None:
            grads = [p.grad.reshape(-1) for p in params if p.grad is not None]
            return torch.linalg.vector_norm(torch.cat(grads)) if grads else torch.zeros((), device=self.device)
        return clip_grad_norm(params, self.max_grad_norm)

    def _check_action_range(self, actions: torch.Tensor) -> None:
        if self.layout.kind == _mappo.CONTINUOUS:
            return
        if actions.is_floating_point() and not torch.equal(actions, torch.round(actions)):
            raise ValueError("MAPPO.learn: Discrete / MultiDiscrete actions must be integer indices, got fractional "
                             "values; for a Box action space set model.actor.continuous_action = True")
        high = torch.tensor(self.layout.sizes, device=actions.device) if self.layout.sizes[0] > 0 else None
        low_bad = bool((actions < 0).any())
        high_bad = high is not None and bool((actions.long() >= high).any())
        if low_bad or high_bad:
            raise ValueError(f"MAPPO.learn: action indices must lie in [0, n) per component with n = "
                             f"{self.layout.sizes} (model.act_dim), got range [{int(actions.min())}, "
                             f"{int(actions.max())}]")

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
