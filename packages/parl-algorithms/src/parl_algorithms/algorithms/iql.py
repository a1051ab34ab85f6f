"""IQL, Implicit Q-Learning (Kostrikov, Nair and Levine 2021, "Offline Reinforcement Learning with Implicit
Q-Learning", ICLR 2022), with PARL's ``IQL`` API; written once for torch and paddle."""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive, unit_interval
from parl_algorithms.algorithms._acting import act

__all__ = ["IQL"]

EXP_ADV_MAX = 100.0  # the paper's clip of the advantage weight exp(beta * A)


def _hyperparameters(max_steps: Any, tau: Any, beta: Any, lr: Any, discount: Any, alpha: Any) -> dict[str, Any]:
    """IQL's checked constructor arguments: ``{"max_steps": int, "tau", "beta", "lr", "discount", "alpha": float}``.

    Raises:
        ValueError: ``max_steps`` < 1, ``tau`` outside ``(0, 1)``, ``beta`` < 0, ``lr`` <= 0, or ``discount`` /
            ``alpha`` outside ``[0, 1]``; the message gives an example.
    """
    if max_steps is None or isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"IQL needs max_steps >= 1 (the number of learn() calls), got {max_steps!r}; "
                         "e.g. IQL(model, max_steps=1_000_000)")
    if not 0.0 < tau < 1.0:
        raise ValueError(f"IQL needs the expectile tau in (0, 1), got {tau!r}; e.g. IQL(model, tau=0.7)")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or beta < 0:
        raise ValueError(f"IQL needs beta >= 0, got {beta!r}; e.g. IQL(model, beta=3.0)")
    return {"max_steps": max_steps, "tau": float(tau), "beta": float(beta), "lr": positive(lr, "lr", "IQL", "3e-4"),
            "discount": unit_interval(discount, "discount", "IQL", "0.99"),
            "alpha": unit_interval(alpha, "alpha", "IQL", "0.005")}


class IQL:
    """Implicit Q-learning: in-sample value learning by expectile regression, and advantage-weighted
    behaviour cloning for the policy (offline; no action outside the dataset is ever evaluated).

    Per batch (section 4 of the paper):

    - ``V``: ``L_2^tau(min(Q1', Q2')(s, a) - V(s))`` with the target critics,
    - ``Q``: ``(r + discount * (1 - terminal) * V(s') - Q_i(s, a))^2`` for both critics,
    - policy: ``-exp(beta * (min Q' - V)).clip(max=100) * log pi(a | s)``, its learning rate cosine-
      annealed to 0 over ``max_steps`` (as the paper's reference code; PARL accepted ``max_steps``
      without using it),
    - target critics: Polyak averaging with rate ``alpha``.

    The model must define ``policy(obs)`` -> a distribution over actions of the class's framework
    (``torch.distributions.Distribution`` / ``paddle.distribution.Distribution``, as PARL's IQL model) or
    ``(mean, log_std)`` of a diagonal Gaussian (each float32 ``[B, act_dim]``); ``qvalue(obs, action)`` ->
    ``(Q1, Q2)`` (each ``[B, 1]`` or ``[B]``); ``value(obs)`` -> ``[B, 1]`` or ``[B]``; ``get_actor_params()``,
    ``get_critic_params()``, ``get_value_params()``.

    Args:
        model: the model (a ``parl.Model`` of the class's framework); the target critics are
            ``copy.deepcopy(model)`` (PARL's ``q_target``).
        max_steps: the number of ``learn`` calls planned (the policy learning rate's cosine period).
        lr: Adam learning rate of the value, critics and policy.
        tau: the expectile of the value loss, in ``(0, 1)`` (0.7 on MuJoCo).
        beta: the inverse temperature of the advantage weights (>= 0; 3 on MuJoCo).
        discount: the discount factor in ``[0, 1]``.
        alpha: the Polyak rate of the target critics in ``[0, 1]``.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        last_info: ``train/q_loss``, ``train/v_loss``, ``train/policy_loss``, ``train/adv_mean`` (floats).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks a required method, or a hyperparameter is missing / out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, max_steps: int | None = None, lr: float = 3e-4, tau: float = 0.7,
                 beta: float = 3.0, discount: float = 0.99, alpha: float = 0.005, *, device: Any = None) -> None:
        super().__init__(model, device=device)
        for method in ("value", "policy", "qvalue", "get_actor_params", "get_critic_params", "get_value_params"):
            check_model_method(model, method, "IQL")
        checked = _hyperparameters(max_steps, tau, beta, lr, discount, alpha)
        self.max_steps, self.tau, self.beta = checked["max_steps"], checked["tau"], checked["beta"]
        self.lr, self.discount, self.alpha = checked["lr"], checked["discount"], checked["alpha"]
        ops = self.ops
        self.q_target = copy.deepcopy(self.model)
        ops.freeze(self.q_target.parameters())
        self.v_optimizer = ops.adam(self.model.get_value_params(), lr=self.lr)
        self.q_optimizer = ops.adam(self.model.get_critic_params(), lr=self.lr)
        self.policy_optimizer, self.policy_lr_schedule = ops.cosine_adam(self.model.get_actor_params(), self.lr,
                                                                         self.max_steps)
        self.last_info: dict[str, float] = {}

    @classmethod
    def _expectile_loss(cls, diff: Any, tau: float) -> Any:
        """Mean of the asymmetric squared loss ``|tau - 1(diff < 0)| * diff^2`` (the paper's ``L_2^tau``, eq. 5).

        Args:
            diff: float32 ``[B]``, ``Q(s, a) - V(s)``.
            tau: the expectile in ``(0, 1)``; 0.5 is the mean squared error / 2.

        Returns:
            the 0-d loss tensor.
        """
        weight = (tau - cls.ops.as_float(diff < 0, "diff")).abs()
        return (weight * diff * diff).mean()

    def _log_prob_and_mean(self, obs: Any, action: Any | None) -> tuple[Any, Any]:
        """``(log pi(action | obs) [B] or None without an action, the policy's mean action [B, act_dim])``."""
        ops = self.ops
        out = self.model.policy(obs)
        if isinstance(out, ops.Distribution):
            log_prob = None if action is None else out.log_prob(action)
            if log_prob is not None and log_prob.ndim == 2:  # per-dimension log-probs (a Normal): sum them
                log_prob = log_prob.sum(-1)
            return log_prob, out.mean
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            distribution = f"{ops.Distribution.__module__.rsplit('.', 1)[0]}.{ops.Distribution.__name__}"
            raise ValueError(f"IQL needs model.policy(obs) to return a {distribution} or (mean, log_std), got "
                             f"{type(out).__name__}")
        mean, log_std = out[0], out[1].expand_as(out[0])
        if action is None:
            return None, mean
        # the closed form, not the framework's Normal (torch's argument validation costs 3 device syncs per step)
        return ops.functional.gaussian_log_prob_entropy(mean, log_std, action)[0], mean

    def predict(self, obs: Any) -> Any:
        """The policy's mean action: float32 ``[B, act_dim]`` for obs ``[B, *obs_shape]`` (``[act_dim]`` for one
        observation ``[obs_dim]``)."""
        return act(self, "predict", obs, lambda x: self._log_prob_and_mean(x, None)[1])

    def learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, Any, Any]:
        """One step on the value, the critics and the policy, then the target critics' Polyak update.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            action: float32 ``[B, act_dim]`` (the dataset's actions).
            reward: float32 ``[B]`` or ``[B, 1]``.
            next_obs: float32 ``[B, *obs_shape]``.
            terminal: float32 / bool ``[B]`` or ``[B, 1]``: 1 if the episode terminated (not truncated).

        Returns:
            ``(q_loss, v_loss, policy_loss)``, 0-d tensors without gradient (PARL's ``update`` return).

        Raises:
            ValueError: shapes do not fit (the message names the argument), or the actions are discrete indices.
        """
        ops = self.ops
        args = ops.to_device(self.device, obs, action, reward, next_obs, terminal)
        try:
            return self._learn(*args)
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    update = learn  # PARL's name

    def _learn(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminal: Any) -> tuple[Any, Any, Any]:
        ops = self.ops
        obs, next_obs = ops.obs_batch(obs, "IQL"), ops.obs_batch(next_obs, "IQL")
        batch = obs.shape[0]
        action = ops.continuous_actions(action, batch, "IQL")
        reward, terminal = ops.column(reward, "reward", batch, "IQL"), ops.column(terminal, "terminal", batch, "IQL")
        with ops.no_grad():
            target_q1, target_q2 = ops.two_q(self.q_target.qvalue(obs, action), "IQL")
            target_q = target_q1.minimum(target_q2)
            next_v = ops.flat_q(self.model.value(next_obs), "IQL")
        v = ops.flat_q(self.model.value(obs), "IQL")
        adv = target_q - v
        v_loss = self._expectile_loss(adv, self.tau)
        q1, q2 = ops.two_q(self.model.qvalue(obs, action), "IQL")
        target = ops.functional.td_target(reward, next_v, terminal, self.discount)
        q_loss = ops.F.mse_loss(q1, target) + ops.F.mse_loss(q2, target)
        weight = (self.beta * adv.detach()).exp().clip(max=EXP_ADV_MAX)
        log_prob, _ = self._log_prob_and_mean(obs, action)
        policy_loss = (weight * -log_prob).mean()
        for optimizer, loss in ((self.q_optimizer, q_loss), (self.v_optimizer, v_loss),
                                (self.policy_optimizer, policy_loss)):
            ops.step(optimizer, loss)
        self.policy_lr_schedule.step()
        self.sync_target(alpha=self.alpha)
        self.last_info = {"train/q_loss": ops.info_scalar(q_loss), "train/v_loss": ops.info_scalar(v_loss),
                          "train/policy_loss": ops.info_scalar(policy_loss), "train/adv_mean": ops.info_mean(adv)}
        return q_loss.detach(), v_loss.detach(), policy_loss.detach()

    def sync_target(self, alpha: float = 0.0) -> None:
        """``q_target = alpha * model + (1 - alpha) * q_target`` (``alpha=1`` copies)."""
        raise NotImplementedError  # each backend's soft update

    def get_info(self) -> dict[str, float]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
