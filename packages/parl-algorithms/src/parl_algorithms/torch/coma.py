"""COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients", AAAI) with PARL's torch ``COMA``
API: a centralised critic with a counterfactual baseline, recurrent decentralised actors, a TD(lambda) critic."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from parl_algorithms._coma import check_coma_batch, check_model_sizes, coma_epsilon, coma_hyperparameters
from parl_algorithms._validation import check_model_method
from parl_algorithms.torch import marl_functional as F
from parl_algorithms.torch._common import LazyInfo, clip_grad_norm, readable_shape_errors
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["COMA"]


class COMA(LazyInfo, Algorithm):
    """COMA for cooperative agents with Discrete actions and a common (team) reward.

    Per ``learn`` call, on a batch of whole episodes:

    1. Critic: ``Q(s_t, (u^-a_t, .))`` for every action of every agent from ``model.value(critic_inputs)``;
       TD(lambda) targets ``G_t`` from the TARGET network on the NEXT step's inputs,
       ``Q'_t = target_model.value(critic_inputs_next)[u^a_{t+1}]`` (:func:`marl_functional.coma_td_lambda_targets`);
       one RMSprop step on the masked squared error.
    2. Actor: the recurrent policy unrolled over the episodes, mixed with epsilon of the uniform distribution over
       the available actions; advantage ``A^a = Q(s, u) - sum_u' pi^a(u'|tau^a) Q(s, (u^-a, u'))`` (eq. 4) from the
       critic's values before its step; one RMSprop step on ``-mean(A^a log pi^a(u^a))``.

    Fixes to PARL 2.2.1's ``parl/algorithms/torch/coma.py`` (same names and signature otherwise):

    * PARL's ``_get_critic_output`` overwrites ``critic_inputs_next`` with ``critic_inputs`` and evaluates the
      TD target with ``self.model``, so its target is the online network on the CURRENT step and its
      ``target_model`` is never read. Here the target is ``target_model.value(critic_inputs_next)``, so
      ``sync_target`` matters (the tests perturb each network and check which one the target follows).
    * PARL divides epsilon by the number of available actions in the whole batch; here by each agent's own.
    * PARL asserts the hyperparameters' types, so ``None`` fails; here ``None`` takes the value of PARL's
      ``coma_config.py`` and a bad value raises ``ValueError`` naming the fix.
    * ``learn`` returns ``(critic_loss, actor_loss)`` (PARL: ``None``); the batch may carry ``terminated`` and
      ``u_next`` to bootstrap time-limit truncations (PARL treats every episode end as terminal).

    The model must define ``policy(obs, h) -> (logits float32 [B, n_actions], h)``, ``value(inputs) -> Q float32
    [B, n_actions]`` (one row per agent), ``get_actor_params()``, ``get_critic_params()``, and
    ``model.actor_model.init_hidden() -> float32 [1, hidden]`` (PARL's ``benchmark/torch/coma/sc2_model.py``).

    Args:
        model: the actor-critic model; the target is ``copy.deepcopy(model)``.
        n_actions: actions per agent (an int or a gymnasium ``Discrete``).
        n_agents: number of agents.
        grad_norm_clip: global L2 norm the actor's and the critic's gradients are each clipped to (PARL: 10).
        actor_lr: actor RMSprop learning rate (PARL: 1e-4).
        critic_lr: critic RMSprop learning rate (PARL: 1e-3).
        gamma: discount in ``[0, 1]`` (PARL: 0.99).
        td_lambda: lambda of the critic's TD(lambda) targets in ``[0, 1]`` (PARL: 0.8).
        entropy_coeff: weight of a policy-entropy bonus (EPyMARL: 0.001; PARL: none, the default 0).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``; default CUDA when available (PARL).

    Raises:
        ValueError: the model lacks a method, declares other ``n_agents`` / ``n_actions`` than given, or a
            hyperparameter is out of range; ``n_actions`` is a continuous (Box) space (use MADDPG or MAPPO).
    """

    def __init__(self, model: Model, n_actions: int, n_agents: int, grad_norm_clip: float | None = None,
                 actor_lr: float | None = None, critic_lr: float | None = None, gamma: float | None = None,
                 td_lambda: float | None = None, *, entropy_coeff: float = 0.0, device: DeviceLike = None) -> None:
        super().__init__(model, device=device)
        for method in ("value", "policy", "get_actor_params", "get_critic_params"):
            check_model_method(model, method, "COMA")
        hp = coma_hyperparameters(n_actions, n_agents, grad_norm_clip, actor_lr, critic_lr, gamma, td_lambda,
                                  entropy_coeff)
        self.n_actions, self.n_agents = hp["n_actions"], hp["n_agents"]
        self.grad_norm_clip, self.actor_lr, self.critic_lr = hp["grad_norm_clip"], hp["actor_lr"], hp["critic_lr"]
        self.gamma, self.td_lambda, self.entropy_coeff = hp["gamma"], hp["td_lambda"], hp["entropy_coeff"]
        check_model_sizes(model, self.n_agents, self.n_actions)
        self.target_model = copy.deepcopy(self.model)
        for param in self.target_model.parameters():
            param.requires_grad_(False)
        self.actor_parameters = list(self.model.get_actor_params())
        self.critic_parameters = list(self.model.get_critic_params())
        self.critic_optimizer = RMSprop(self.critic_parameters, lr=self.critic_lr)
        self.actor_optimizer = RMSprop(self.actor_parameters, lr=self.actor_lr)
        self.last_info: dict[str, float] = {}

    def init_hidden(self, ep_num: int) -> torch.Tensor:
        """The actor's initial hidden state for ``ep_num`` episodes, float32 ``[ep_num, n_agents, hidden]`` (a new
        tensor per call).

        Raises:
            ValueError: the model has no ``actor_model.init_hidden()`` (COMA's actor is recurrent).
        """
        actor = getattr(self.model, "actor_model", None)
        if not callable(getattr(actor, "init_hidden", None)):
            raise ValueError("COMA needs a recurrent actor: give the model an `actor_model` attribute with "
                             "`init_hidden()` returning float32 [1, hidden] (PARL's sc2_model.ActorModel)")
        # a fresh tensor, not PARL's ``expand`` view: there every agent's slot was one memory, so PARL's
        # sc2_agent (``self.rnn_h[agent_id] = h``) wrote each agent's hidden state over the others'
        return actor.init_hidden().unsqueeze(0).repeat(int(ep_num), self.n_agents, 1).to(self.device)

    @on_device
    @readable_shape_errors
    def predict(self, obs: torch.Tensor, rnn_h_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's action probabilities (no gradient; no masking or epsilon: the agent adds them).

        Args:
            obs: float32 ``[B, D_actor]`` actor inputs (obs, one-hot last action, one-hot agent id: PARL).
            rnn_h_in: the hidden state, float32 ``[B, hidden]`` (or what ``init_hidden`` gave).

        Returns:
            ``(prob float32 [B, n_actions], rnn_h_out float32 [B, hidden])``.
        """
        obs = torch.as_tensor(obs, dtype=torch.float32)
        if obs.ndim != 2:
            raise ValueError(f"COMA.predict needs obs float32 [B, D_actor] (one row per agent), got shape "
                             f"{list(obs.shape)}; add a batch axis with obs[None]")
        with torch.no_grad():
            logits, rnn_h_out = self.model.policy(obs, rnn_h_in)
            return torch.softmax(self._logits(logits, obs.shape[0]), dim=-1), rnn_h_out

    def _logits(self, logits: Any, rows: int) -> torch.Tensor:
        if isinstance(logits, (tuple, list)) or logits.shape[-1] != self.n_actions or logits.numel() != \
                rows * self.n_actions:
            got = type(logits).__name__ if isinstance(logits, (tuple, list)) else list(logits.shape)
            raise ValueError(f"COMA needs model.policy(obs, h) to return (logits float32 "
                             f"[B, n_actions={self.n_actions}]"
                             f", h) for B={rows} input rows, got {got}. {_HINT}")
        return logits.reshape(rows, self.n_actions)

    def _q(self, net: Model, inputs: torch.Tensor) -> torch.Tensor:
        episodes, steps, agents = inputs.shape[:3]
        q = net.value(inputs.reshape(episodes * steps * agents, -1))
        if q.shape != (episodes * steps * agents, self.n_actions):
            raise ValueError(f"COMA needs model.value(inputs) to return Q of every action of the agent, float32 "
                             f"[B, n_actions={self.n_actions}], got {list(q.shape)} for B={episodes * steps * agents}"
                             f". {_HINT}")
        return q.reshape(episodes, steps, agents, self.n_actions)

    def _batch(self, batch: dict) -> dict[str, torch.Tensor]:
        out = {}
        for key, value in batch.items():
            if key in ("u", "u_next"):
                tensor = torch.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value,
                                         device=self.device).long()
                out[key] = tensor.squeeze(-1) if tensor.ndim == 4 else tensor
            elif key in ("o", "s", "u_onehot"):
                continue
            else:
                tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
                out[key] = tensor.to(device=self.device, dtype=torch.float32)
        return out

    @readable_shape_errors
    def learn(self, batch: dict, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
        """One critic step then one actor step on a batch of whole episodes.

        Args:
            batch: PARL's dict of tensors or numpy arrays (``E`` episodes of ``T`` steps): ``r`` float32 ``[E, T,
                1]``, ``u`` int64 ``[E, T, n_agents, 1]``, ``avail_u`` ``[E, T, n_agents, n_actions]``, ``padded`` /
                ``isover`` float32 ``[E, T, 1]``, ``actor_inputs`` ``[E, T, n_agents, D_actor]``,
                ``critic_inputs`` / ``critic_inputs_next`` ``[E, T, n_agents, D_critic]``; optional
                ``terminated`` ``[E, T, 1]`` and ``u_next`` ``[E, T, n_agents, 1]`` (see
                :mod:`parl_algorithms._coma`); ``o``, ``s``, ``u_onehot`` are accepted and unused.
            epsilon: the exploration rate the episodes were collected with, in ``[0, 1]``.

        Returns:
            ``(critic_loss, actor_loss)`` float32 scalar tensors.

        Raises:
            TypeError: ``batch`` is not a dict.
            ValueError: a key is missing, a shape or ``n_agents`` does not fit, the padding is inconsistent,
                actions are fractional (continuous: use MADDPG / MAPPO), or ``epsilon`` is out of range.
        """
        epsilon = coma_epsilon(epsilon)
        episodes, steps = check_coma_batch(batch, self.n_agents, self.n_actions)
        b = self._batch(batch)
        u = b["u"]
        if "u_next" in b:
            u_next = b["u_next"]
        else:
            u_next = torch.zeros_like(u)
            u_next[:, :-1] = u[:, 1:]
        mask = (1.0 - b["padded"]).expand(episodes, steps, self.n_agents)

        # critic: TD(lambda) targets from the target network on the next step's inputs
        q_evals = self._q(self.model, b["critic_inputs"])
        with torch.no_grad():
            q_next = self._q(self.target_model, b["critic_inputs_next"]).gather(-1, u_next.unsqueeze(-1)).squeeze(-1)
        targets = F.coma_td_lambda_targets(b["r"], q_next, b.get("terminated", b["isover"]), b["isover"],
                                           b["padded"], self.gamma, self.td_lambda)
        q_taken = q_evals.gather(-1, u.unsqueeze(-1)).squeeze(-1)
        critic_loss = F.coma_critic_loss(q_taken, targets, mask)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        critic_grad_norm = clip_grad_norm(self.critic_parameters, self.grad_norm_clip)
        self.critic_optimizer.step()

        # actor: the recurrent policy over the episodes, the counterfactual advantage from the pre-step critic
        h = self.init_hidden(episodes)
        logits = []
        inputs = b["actor_inputs"]
        for t in range(steps):
            out, h = self.model.policy(inputs[:, t].reshape(episodes * self.n_agents, -1), h)
            logits.append(self._logits(out, episodes * self.n_agents).reshape(episodes, self.n_agents, -1))
        pi = F.coma_policy_probs(torch.stack(logits, dim=1), b["avail_u"], epsilon)
        advantage, _, _ = F.coma_counterfactual_advantage(q_evals, pi, u)
        actor_loss, entropy = F.coma_actor_loss(pi, u, advantage, mask, self.entropy_coeff)
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        actor_grad_norm = clip_grad_norm(self.actor_parameters, self.grad_norm_clip)
        self.actor_optimizer.step()

        count = mask.sum().clamp_min(1.0)
        self.last_info = {
            "train/critic_loss": critic_loss.detach(), "train/actor_loss": actor_loss.detach(),
            "train/entropy": entropy, "train/q_taken_mean": (q_taken.detach() * mask).sum() / count,
            "train/target_mean": (targets * mask).sum() / count,
            "train/advantage_mean": (advantage * mask).sum() / count,
            "train/critic_grad_norm": critic_grad_norm, "train/actor_grad_norm": actor_grad_norm,
        }
        return critic_loss.detach(), actor_loss.detach()

    def sync_target(self, decay: float = 0) -> None:
        """``target = decay * target + (1 - decay) * model`` (PARL: a hard copy every ``target_update_cycle``
        learn calls, ``decay=0``)."""
        self.model.sync_weights_to(self.target_model, decay=decay)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)


class RMSprop(torch.optim.RMSprop):
    """``torch.optim.RMSprop`` (PARL's COMA optimizer; alpha 0.99, eps 1e-8, no momentum) whose ``step`` is the same
    arithmetic on the same state (``square_avg``, ``step``) in five foreach calls, without the ``torch._dynamo``
    import that ``torch.optim``'s step decorator makes at the first step of a process (1-5 s here). It falls back
    to ``torch.optim.RMSprop.step`` for momentum, centered, weight decay, maximize, a closure or hooks."""

    if hasattr(torch.optim.Optimizer.add_param_group, "__wrapped__"):  # (the same lazy import, at construction)
        add_param_group = torch.optim.Optimizer.add_param_group.__wrapped__

    def step(self, closure: Any = None) -> Any:  # noqa: D102 (torch.optim.RMSprop.step)
        if closure is not None or self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks or any(
                g["momentum"] or g["centered"] or g["weight_decay"] or g["maximize"] or g.get("differentiable")
                or isinstance(g["lr"], torch.Tensor) for g in self.param_groups):
            return super().step(closure)
        with torch.no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                grads, avgs, steps = [p.grad for p in params], [], []
                for p in params:
                    state = self.state[p]
                    if not state:
                        state["step"] = torch.zeros((), dtype=torch.float32)
                        state["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    avgs.append(state["square_avg"])
                    steps.append(state["step"])
                torch._foreach_add_(steps, 1)
                torch._foreach_mul_(avgs, group["alpha"])
                torch._foreach_addcmul_(avgs, grads, grads, value=1 - group["alpha"])
                denominators = torch._foreach_sqrt(avgs)
                torch._foreach_add_(denominators, group["eps"])
                torch._foreach_addcdiv_(params, grads, denominators, value=-group["lr"])
        return None


_HINT = "See PARL's benchmark/torch/coma/sc2_model.py (ComaModel: actor_model, critic_model) for the contract."
