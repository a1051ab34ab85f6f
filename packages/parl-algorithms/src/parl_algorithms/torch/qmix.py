"""QMIX (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement
Learning") with PARL's ``QMIX`` API: recurrent agents, a monotonic mixer, padded episode batches with
available-action masks, Double-Q targets and RMSprop.

Differences from PARL 2.2.1's torch QMIX (same constructor, same ``learn`` arguments and returns):
``sync_target()`` exists (PARL torch had none: its agent called ``model.update``); the terminal transition is
in the loss (see :mod:`parl_algorithms._qmix`); the batch is validated (padding, masks, agent counts, actions);
the target networks run without autograd; ``learn`` leaves the acting hidden state alone; ``device=``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from parl_algorithms import _qmix
from parl_algorithms._validation import check_model_method
from parl_algorithms.torch import marl_functional
from parl_algorithms.torch._common import LazyInfo, clip_grad_norm, optimizer_params
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["QMIX"]


def _check_torch_model(model: Any, role: str) -> None:
    if not isinstance(model, Model):
        other = "paddle" if any(c.__module__.startswith(("paddle", "parl_core.paddle")) for c in type(model).__mro__) \
            else None
        hint = ("build it on parl_core.torch.Model (torch.nn layers), or use the paddle algorithm "
                "(parl_algorithms.paddle.QMIX)") if other else "define `class MyModel(parl.Model)`"
        raise TypeError(f"QMIX (torch) expects {role} to be a torch parl.Model, got {type(model).__name__}; {hint}")


def _host(value: Any) -> Any:
    """A numpy view / copy of a tensor or array-like (for the batch checks)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value if value is None or hasattr(value, "shape") else np.asarray(value)


class QMIX(_qmix.ActingHiddenState, LazyInfo, Algorithm):
    """QMIX: per-agent recurrent Q networks mixed into ``Q_tot`` by a state-conditioned monotonic mixer.

    Model contracts (PARL's):
        ``agent_model.init_hidden()`` -> float32 ``[1, hidden]``; ``agent_model(obs, h)`` with obs float32
        ``[B * n_agents, obs_dim]`` and h ``[B, n_agents, hidden]`` or ``[B * n_agents, hidden]`` ->
        ``(q [B * n_agents, n_actions], h [B * n_agents, hidden])``. One network shared by the agents (append
        an agent id to the observation to tell them apart, as PARL's env wrapper does).
        ``qmixer_model(agent_qs [B, T, n_agents], states [B, T, state_dim])`` -> ``Q_tot [B, T, 1]``, with an
        int attribute ``n_agents``. Monotonicity (``dQ_tot / dQ_i >= 0``) is the mixer's job (non-negative
        hypernetwork weights).

    Args:
        agent_model: the agents' shared recurrent Q network.
        qmixer_model: the mixing network.
        double_q: Double-Q targets (the online agent network picks the next action, the target one values it).
        gamma: discount in ``[0, 1]``.
        lr: RMSprop learning rate (alpha 0.99, eps 1e-5: PARL's and PyMARL's).
        clip_grad_norm: clip the global gradient norm of both networks to this value; ``None`` does not.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``; default CUDA when available (PARL).

    Attributes:
        target_agent_model, target_qmixer_model: the target networks (``copy.deepcopy``; :meth:`sync_target`).
        n_agents: ``qmixer_model.n_agents``.
        hidden_states: the acting hidden state set by :meth:`_init_hidden_states` (PARL's agents read and write it).
        last_info: ``train/q_tot_mean``, ``train/target_mean``, ``train/grad_norm`` of the last ``learn``.

    Raises:
        TypeError: a model is not a torch ``parl.Model``.
        ValueError: ``agent_model`` lacks ``init_hidden`` / ``forward``, ``qmixer_model`` lacks ``forward`` or an
            int ``n_agents``, or a hyperparameter is out of range.
    """

    def __init__(self, agent_model: Model, qmixer_model: Model, double_q: bool = True, gamma: float = 0.99,
                 lr: float = 0.0005, clip_grad_norm: float | None = None, *, device: DeviceLike = None) -> None:
        _check_torch_model(agent_model, "agent_model")
        _check_torch_model(qmixer_model, "qmixer_model")
        super().__init__(None, device=device)
        check_model_method(agent_model, "init_hidden", "QMIX")
        check_model_method(agent_model, "forward", "QMIX")
        check_model_method(qmixer_model, "forward", "QMIX")
        self.n_agents = _qmix.qmixer_n_agents(qmixer_model)
        hp = _qmix.qmix_hyperparameters(double_q, gamma, lr, clip_grad_norm)
        self.double_q, self.gamma, self.lr, self.clip_grad_norm = (hp["double_q"], hp["gamma"], hp["lr"],
                                                                   hp["clip_grad_norm"])
        self.agent_model = agent_model.to(self.device)
        self.qmixer_model = qmixer_model.to(self.device)
        self.target_agent_model = copy.deepcopy(self.agent_model)
        self.target_qmixer_model = copy.deepcopy(self.qmixer_model)
        for target in (self.target_agent_model, self.target_qmixer_model):
            target.requires_grad_(False)
        params = list(self.agent_model.parameters()) + list(self.qmixer_model.parameters())
        self.optimizer = torch.optim.RMSprop(params, lr=self.lr, alpha=0.99, eps=1e-5)

    def _initial_hidden(self, model: Model, batch_size: int) -> torch.Tensor:
        return model.init_hidden().unsqueeze(0).expand(batch_size, self.n_agents, -1)

    def _init_hidden_states(self, batch_size: int) -> None:
        """Zero the acting hidden states for ``batch_size`` episodes: ``[batch_size, n_agents, hidden]`` (PARL)."""
        self.hidden_states = self._initial_hidden(self.agent_model, batch_size)
        self.target_hidden_states = self._initial_hidden(self.target_agent_model, batch_size)

    @on_device
    def predict_local_q(self, obs: torch.Tensor, hidden_state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of the agent network, without autograd: ``agent_model(obs, hidden_state)``.

        Args:
            obs: float32 ``[n_agents, obs_dim]`` (one episode) or ``[E * n_agents, obs_dim]`` (E episodes,
                agent-minor).
            hidden_state: float32 ``[E, n_agents, hidden]`` or ``[E * n_agents, hidden]``.

        Returns:
            ``(q float32 [E * n_agents, n_actions], next hidden state [E * n_agents, hidden])``; mask the
            unavailable actions before the argmax.
        """
        with torch.no_grad():
            return self.agent_model(obs.float(), hidden_state)

    def _unroll(self, model: Model, obs: torch.Tensor) -> torch.Tensor:
        batch, steps, n_agents, obs_dim = obs.shape
        hidden = self._initial_hidden(model, batch)
        qs = []
        for t in range(steps):
            q, hidden = model(obs[:, t].reshape(batch * n_agents, obs_dim), hidden)
            qs.append(q.reshape(batch, n_agents, -1))
        return torch.stack(qs, dim=1)

    def learn(self, state_batch: torch.Tensor, actions_batch: torch.Tensor, reward_batch: torch.Tensor,
              terminated_batch: torch.Tensor, obs_batch: torch.Tensor, available_actions_batch: torch.Tensor,
              filled_batch: torch.Tensor) -> tuple[float, float]:
        """One RMSprop step on the masked TD loss of a batch of padded episodes (PARL's arguments and returns).

        Args:
            state_batch: float32 ``[B, T, state_dim]``.
            actions_batch: int ``[B, T, n_agents]``: the actions taken (available ones).
            reward_batch: float32 ``[B, T, 1]``: team reward of step t.
            terminated_batch: 0/1 ``[B, T, 1]``: step t ended the episode (a terminal, not a time limit).
            obs_batch: float32 ``[B, T, n_agents, obs_dim]``.
            available_actions_batch: 0/1 ``[B, T, n_agents, n_actions]``.
            filled_batch: 0/1 ``[B, T, 1]``: 0 on the real steps, 1 on the padding after an episode's end.
                (numpy arrays or tensors; the layout is :mod:`parl_algorithms._qmix`'s.)

        Returns:
            ``(loss, mean_td_error)`` as Python floats: the mean squared and the mean masked TD error over the
            real transitions.

        Raises:
            ValueError: see :func:`parl_algorithms._qmix.check_episode_batch` (missing masks, wrong padding,
                agent counts that differ, unavailable / continuous actions, shapes), or the agent network's
                output does not have ``n_actions`` columns.
        """
        arrays = dict(zip(_qmix.BATCH_NAMES, (state_batch, actions_batch, reward_batch, terminated_batch, obs_batch,
                                              available_actions_batch, filled_batch), strict=True))
        batch, steps, n_actions = _qmix.check_episode_batch({k: _host(v) for k, v in arrays.items()}, self.n_agents)
        tensor = {k: torch.as_tensor(v, device=self.device) for k, v in arrays.items()}
        state, obs = tensor["state_batch"].float(), tensor["obs_batch"].float()
        reward, terminated = tensor["reward_batch"].float(), tensor["terminated_batch"].float()
        filled, actions = tensor["filled_batch"].float(), tensor["actions_batch"].long()
        available = tensor["available_actions_batch"] != 0

        local_qs = self._unroll(self.agent_model, obs)  # [B, T, n_agents, n_actions]
        if local_qs.shape[3] != n_actions:
            raise ValueError(f"QMIX.learn: agent_model returns {local_qs.shape[3]} Q values per agent but "
                             f"available_actions_batch has n_actions={n_actions}; build the agent network with the "
                             "env's n_actions outputs")
        chosen_local_qs = local_qs[:, :-1].gather(3, actions[:, :-1].unsqueeze(3)).squeeze(3)
        q_tot = self.qmixer_model(chosen_local_qs, state[:, :-1])
        with torch.no_grad():
            target_local_qs = self._unroll(self.target_agent_model, obs)[:, 1:]
            online_next = local_qs.detach()[:, 1:] if self.double_q else None
            target_max_qs = marl_functional.qmix_target_max_q(target_local_qs, available[:, 1:], online_next)
            target_q_tot = self.target_qmixer_model(target_max_qs, state[:, 1:])
        mask = _qmix.transition_mask(filled)
        loss, mean_td_error = marl_functional.qmix_td_loss(q_tot, target_q_tot, reward[:, :-1],
                                                           terminated[:, :-1], mask, self.gamma)
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = None
        if self.clip_grad_norm is not None:
            grad_norm = clip_grad_norm(optimizer_params(self.optimizer), self.clip_grad_norm)
        self.optimizer.step()
        count = mask.sum()
        info = {"train/q_tot_mean": (q_tot.detach() * mask).sum() / count,
                "train/target_mean": (target_q_tot * mask).sum() / count}
        if grad_norm is not None:
            info["train/grad_norm"] = grad_norm
        self.last_info = info
        return loss.item(), mean_td_error.item()

    def sync_target(self) -> None:
        """Copy the agent network and the mixer into their target networks (PARL paddle's ``sync_target``)."""
        self.agent_model.sync_weights_to(self.target_agent_model)
        self.qmixer_model.sync_weights_to(self.target_qmixer_model)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
