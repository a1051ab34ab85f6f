"""QMIX (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent Reinforcement
Learning") with PARL's ``QMIX`` API: recurrent agents, a monotonic mixer, padded episode batches with
available-action masks, Double-Q targets and RMSprop; written once for torch and paddle.

The episode batch (PARL's ``QMIX.learn`` arguments; ``B`` episodes of ``T`` steps, batch-major, time on axis 1):

    state_batch              float32 [B, T, state_dim]        global state s_t
    actions_batch            int     [B, T, n_agents]         a_t (index into the n_actions of each agent)
    reward_batch             float32 [B, T, 1]                team reward r_t of the step t -> t+1
    terminated_batch         float32 [B, T, 1]                1 where the step t -> t+1 ended the episode (terminal)
    obs_batch                float32 [B, T, n_agents, obs_dim]
    available_actions_batch  0/1     [B, T, n_agents, n_actions]
    filled_batch             float32 [B, T, 1]                PARL's padding flag: 0 = a real step, 1 = padding

Step ``t`` is a transition when ``t < T - 1`` (the last step only provides s', o' and the next available actions
of step ``T - 2``) and ``filled[t] = 0``. Episodes shorter than ``T`` are padded after their end with
``filled = 1`` (PARL pads with ``terminated = 1`` and zeros), so each episode's ``filled`` reads ``0...0 1...1``.
An episode truncated by a time limit (not terminal) bootstraps from its last stored step: store
``episode_limit + 1`` steps so that the final observation is the last step.

Differences from PARL 2.2.1's QMIX (same constructor, same ``learn`` arguments and returns):

* Loss mask: ``mask_t = 1 - filled_t``. PARL multiplies it by ``(1 - terminated_t)``, which also drops the
  terminal transition itself from the loss, so the reward of an episode's last step (LBF's last food, SMAC's win
  bonus) is never learned; PyMARL / EPyMARL (Rashid et al.'s code) keep it (their mask removes the steps *after*
  the terminal one). The terminal target is ``r_t`` (no bootstrap), as in PARL.
* The batch is validated (padding, masks, agent counts, actions); the target networks run without autograd;
  ``learn`` leaves the acting hidden state alone; ``device=``.
* torch: ``sync_target()`` exists (PARL torch had none: its agent called ``model.update``).
* paddle: RMSprop with PyTorch's arithmetic (``sqrt(r) + eps``, as PARL's torch QMIX and PyMARL; paddle's own
  RMSProp uses ``sqrt(r + eps)``: :mod:`parl_algorithms.paddle.rmsprop`); unavailable actions get -1e10 (PARL
  paddle subtracted 1e8).
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np

from parl_algorithms._validation import check_model_method, positive, unit_interval

__all__ = ["CONTINUOUS_HINT", "BATCH_NAMES", "UNAVAILABLE_Q", "qmix_hyperparameters", "qmixer_n_agents",
           "check_episode_batch", "transition_mask", "same_shape", "qmix_target_max_q", "qmix_td_loss",
           "ActingHiddenState", "QMIX"]

ALGO = "QMIX"
#: Q value given to unavailable actions before a max / argmax (PARL torch's constant)
UNAVAILABLE_Q = -1e10
CONTINUOUS_HINT = ("QMIX is for Discrete action spaces only (its mixer combines one Q value per agent's chosen "
                   "action); for continuous (Box) actions use MADDPG (parl.algorithms.MADDPG) or MAPPO "
                   "(parl.algorithms.MAPPO)")
BATCH_NAMES = ("state_batch", "actions_batch", "reward_batch", "terminated_batch", "obs_batch",
               "available_actions_batch", "filled_batch")
_SHAPES = {"state_batch": "[B, T, state_dim]", "actions_batch": "[B, T, n_agents]", "reward_batch": "[B, T, 1]",
           "terminated_batch": "[B, T, 1]", "obs_batch": "[B, T, n_agents, obs_dim]",
           "available_actions_batch": "[B, T, n_agents, n_actions]", "filled_batch": "[B, T, 1]"}


def qmix_hyperparameters(double_q: Any, gamma: Any, lr: Any, clip_grad_norm: Any) -> dict[str, Any]:
    """QMIX's checked constructor arguments (PARL's defaults are the caller's).

    Returns:
        ``{"double_q": bool, "gamma": float, "lr": float, "clip_grad_norm": float or None}``.

    Raises:
        ValueError: ``double_q`` not a bool, ``gamma`` outside ``[0, 1]``, ``lr`` not > 0, ``clip_grad_norm``
            neither ``None`` nor > 0; the message gives an example.
    """
    if not isinstance(double_q, (bool, np.bool_)):
        raise ValueError(f"QMIX needs double_q True or False, got {double_q!r}; e.g. QMIX(agent_model, "
                         "qmixer_model, double_q=True)")
    clip = None if clip_grad_norm is None else positive(clip_grad_norm, "clip_grad_norm", ALGO, "10")
    return {"double_q": bool(double_q), "gamma": unit_interval(gamma, "gamma", ALGO, "0.99"),
            "lr": positive(lr, "lr", ALGO, "0.0005"), "clip_grad_norm": clip}


def qmixer_n_agents(qmixer_model: Any) -> int:
    """``qmixer_model.n_agents`` (PARL's contract: an int attribute, not a method).

    Raises:
        ValueError: the attribute is missing, callable, or not a positive int.
    """
    n_agents = getattr(qmixer_model, "n_agents", None)
    if callable(n_agents) or isinstance(n_agents, bool) or not isinstance(n_agents, (int, np.integer)) \
            or n_agents < 1:
        raise ValueError(f"QMIX needs qmixer_model.n_agents, the number of agents as an int attribute (not a "
                         f"method), got {n_agents!r}; set `self.n_agents = n_agents` in "
                         f"{type(qmixer_model).__name__}.__init__")
    return int(n_agents)


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return None if shape is None else tuple(int(s) for s in shape)


def check_episode_batch(arrays: dict[str, Any], n_agents: int) -> tuple[int, int, int]:
    """Validate a ``QMIX.learn`` batch: shapes, agent counts, padding, masks and actions.

    Args:
        arrays: the seven batch arguments by name (:data:`BATCH_NAMES`). ``state_batch``, ``reward_batch`` and
            ``obs_batch`` need only a ``shape``; ``actions_batch``, ``terminated_batch``,
            ``available_actions_batch`` and ``filled_batch`` are read as numpy arrays (host copies).
        n_agents: ``qmixer_model.n_agents``.

    Returns:
        ``(B, T, n_actions)``.

    Raises:
        ValueError: an argument is missing (``None``: QMIX needs its masks), a shape is not the documented one
            (B / T / agent counts that disagree with each other or with ``qmixer_model.n_agents``, or fewer
            than 2 steps), continuous (non-integer or ``[B, T, n_agents, act_dim]``) actions, ``filled`` not
            0/1 of the form ``0...0 1...1`` per episode, real steps after a terminal step, a batch with no real
            transition, an action out of range or unavailable on a real step, or a real step where an agent
            has no available action.
    """
    missing = [name for name in BATCH_NAMES if arrays.get(name) is None]
    if missing:
        raise ValueError(f"QMIX.learn needs all seven batch arrays; {', '.join(missing)} is None. "
                         "available_actions_batch [B, T, n_agents, n_actions] (1 = available; all ones when every "
                         "action always is) and filled_batch [B, T, 1] (0 = a real step, 1 = padding after the "
                         "episode; all zeros when nothing is padded) are the masks QMIX needs")
    shapes = {name: _shape(arrays[name]) for name in BATCH_NAMES}
    actions = shapes["actions_batch"]
    if actions is not None and len(actions) == 4:
        raise ValueError(f"QMIX.learn: actions_batch has shape {actions} [B, T, n_agents, act_dim], a continuous "
                         f"action; {CONTINUOUS_HINT}")
    ranks = {"state_batch": 3, "actions_batch": 3, "reward_batch": 3, "terminated_batch": 3, "obs_batch": 4,
             "available_actions_batch": 4, "filled_batch": 3}
    for name, rank in ranks.items():
        if shapes[name] is None or len(shapes[name]) != rank:
            raise ValueError(f"QMIX.learn: {name} must be {_SHAPES[name]}, got "
                             f"{shapes[name] if shapes[name] is not None else type(arrays[name]).__name__}; "
                             "batch whole episodes as [B, T, ...] (PARL's layout)")
    batch, steps = shapes["state_batch"][:2]
    for name in BATCH_NAMES:
        if shapes[name][:2] != (batch, steps):
            raise ValueError(f"QMIX.learn: every batch array is [B, T, ...] with the B={batch} episodes and T={steps} "
                             f"steps of state_batch; {name} has shape {shapes[name]}")
    for name in ("reward_batch", "terminated_batch", "filled_batch"):
        if shapes[name][2] != 1:
            raise ValueError(f"QMIX.learn: {name} must be {_SHAPES[name]} (one team value per step), got "
                             f"{shapes[name]}; sum the agents' rewards into one team reward, and pass "
                             f"{name}[..., None] for a [B, T] array")
    counts = {"qmixer_model.n_agents": n_agents, "actions_batch": actions[2],
              "obs_batch": shapes["obs_batch"][2], "available_actions_batch": shapes["available_actions_batch"][2]}
    if len(set(counts.values())) != 1:
        listed = ", ".join(f"{k}: {v}" for k, v in counts.items())
        raise ValueError(f"QMIX.learn: the agent counts differ ({listed}); build the mixer with the env's "
                         "n_agents (e.g. QMixerModel(n_agents=env.n_agents, ...)) and store one entry per agent in "
                         "actions [B, T, n_agents], obs [B, T, n_agents, obs_dim] and available actions "
                         "[B, T, n_agents, n_actions]")
    if steps < 2:
        raise ValueError(f"QMIX.learn needs T >= 2 steps per episode (step t's target uses step t + 1), got T={steps}")
    n_actions = shapes["available_actions_batch"][3]
    _check_values(arrays, n_actions)
    return batch, steps, n_actions


def _first(index: np.ndarray) -> str:
    return "[" + ", ".join(str(int(i)) for i in np.argwhere(index)[0]) + "]"


def _check_values(arrays: dict[str, Any], n_actions: int) -> None:
    filled = np.asarray(arrays["filled_batch"])[..., 0]
    terminated = np.asarray(arrays["terminated_batch"])[..., 0]
    avail = np.asarray(arrays["available_actions_batch"])
    actions = np.asarray(arrays["actions_batch"])
    for name, value in (("filled_batch", filled), ("terminated_batch", terminated),
                        ("available_actions_batch", avail)):
        bad = (value != 0) & (value != 1)
        if bad.any():
            raise ValueError(f"QMIX.learn: {name} must hold 0 / 1 flags, got {value[bad].flat[0]!r} at "
                             f"{_first(bad)}")
    real = filled == 0
    if np.any(np.diff(filled, axis=1) < 0):
        episode = int(np.argwhere(np.diff(filled, axis=1) < 0)[0, 0])
        raise ValueError(f"QMIX.learn: filled_batch[{episode}] is {filled[episode].astype(int).tolist()}, not of the "
                         "form 0...0 1...1; filled is PARL's padding flag, 0 for the episode's real steps and 1 for "
                         "the padding appended after its end (pad each episode at its end, never inside it)")
    if not real[:, :-1].any():
        raise ValueError("QMIX.learn: the batch has no real transition (filled_batch is 1 at every step but the last); "
                         "filled is 0 on an episode's real steps and 1 only on the padding after its end")
    after_terminal = (terminated[:, :-1] != 0) & real[:, :-1] & real[:, 1:]
    if after_terminal.any():
        b, t = np.argwhere(after_terminal)[0]
        raise ValueError(f"QMIX.learn: terminated_batch[{b}, {t}] = 1 but step {t + 1} of episode {b} is not padding "
                         f"(filled_batch[{b}, {t + 1}] = 0); the steps after an episode's terminal step must be "
                         "padding with filled = 1 (one episode per row)")
    none = real[:, :, None] & ~avail.any(axis=3)
    if none.any():
        raise ValueError(f"QMIX.learn: available_actions_batch{_first(none)} has no available action on a real step "
                         "(filled = 0); every agent must have at least one available action (e.g. a no-op) on the "
                         "steps of its episode")
    if actions.dtype.kind == "f" and not np.array_equal(actions, np.round(actions)):
        raise ValueError(f"QMIX.learn: actions_batch holds fractional values; it must hold action indices "
                         f"[B, T, n_agents]. {CONTINUOUS_HINT}")
    if actions.dtype.kind not in "iufb":
        raise ValueError(f"QMIX.learn: actions_batch must hold integer action indices, got dtype {actions.dtype}")
    used = real[:, :-1, None] & np.ones(actions.shape[2], bool)  # the steps whose action enters the loss
    chosen = actions[:, :-1]
    out = used & ((chosen < 0) | (chosen >= n_actions))
    if out.any():
        raise ValueError(f"QMIX.learn: actions_batch{_first(out)} = {int(chosen[out][0])} is outside [0, {n_actions}) "
                         f"(n_actions from available_actions_batch [B, T, n_agents, n_actions])")
    picked = np.take_along_axis(avail[:, :-1], np.clip(chosen, 0, n_actions - 1).astype(np.int64)[..., None],
                                axis=3)[..., 0]
    unavailable = used & (picked == 0)
    if unavailable.any():
        b, t, i = np.argwhere(unavailable)[0]
        raise ValueError(f"QMIX.learn: actions_batch[{b}, {t}, {i}] = {int(chosen[b, t, i])} is unavailable "
                         f"(available_actions_batch[{b}, {t}, {i}] = {avail[b, t, i].astype(int).tolist()}); "
                         "choose actions among the available ones (mask the Q values / the random draw with "
                         "env.avail_actions()) and store the mask of the step the action was taken in")


def transition_mask(filled: Any) -> Any:
    """``1 - filled[:, :-1]``: float ``[B, T - 1, 1]``, 1 on the transitions that enter the loss (any tensor type).

    With a batch that passed :func:`check_episode_batch`, this is PyMARL's ``filled * (1 - terminated_{t-1})``
    in PARL's padding convention: the terminal transition is kept, the padding after it is not (PARL 2.2.1's
    ``(1 - filled)(1 - terminated)`` also drops the terminal transition; see the module docstring).
    """
    return 1 - filled[:, :-1]


def same_shape(names: str, *tensors: Any) -> None:
    """Raises ``ValueError`` naming ``names`` unless every tensor (numpy, torch or paddle) has one shape."""
    shapes = [tuple(t.shape) for t in tensors]
    if len(set(shapes)) != 1:
        raise ValueError(f"{names} must have the same shape, got {', '.join(map(str, shapes))}")


def qmix_target_max_q(ops: Any, target_local_qs: Any, available_actions: Any, local_qs: Any = None) -> Any:
    """Each agent's bootstrap value at the next step, over its available actions only.

    ``max_u Q_i^-(tau', u)`` (Rashid et al. 2018, Section 4: the target network's greedy value), or with
    ``local_qs`` the Double-Q form ``Q_i^-(tau', argmax_u Q_i(tau', u))`` (van Hasselt et al. 2016): the online
    network picks the action, the target network values it. Unavailable actions are set to -1e10 first
    (PARL's constant), so neither the max nor the argmax ever picks one while any action is available.

    Args:
        target_local_qs: float32 ``[B, T, n_agents, n_actions]``: the target agent network's Q values of the
            next steps.
        available_actions: bool (or 0/1) ``[B, T, n_agents, n_actions]``: the next steps' available actions.
        local_qs: float32 ``[B, T, n_agents, n_actions]``: the online network's Q values of the same steps
            (detached), or ``None`` for the plain max.

    Returns:
        float32 ``[B, T, n_agents]`` (a bootstrap target: computed without gradient in ``QMIX.learn``).

    Raises:
        ValueError: the shapes differ or are not 4-D.
    """
    tensors = (target_local_qs, available_actions) + (() if local_qs is None else (local_qs,))
    same_shape("target_local_qs, available_actions (and local_qs)", *tensors)
    if target_local_qs.ndim != 4:
        raise ValueError(f"qmix_target_max_q expects [B, T, n_agents, n_actions], got {tuple(target_local_qs.shape)}")
    available = available_actions != 0
    target = ops.where(available, target_local_qs, UNAVAILABLE_Q)
    if local_qs is None:
        return target.amax(3)
    greedy = ops.where(available, local_qs, UNAVAILABLE_Q).argmax(3, keepdim=True)
    return ops.take_along_axis(target, greedy, 3).squeeze(3)


def qmix_td_loss(ops: Any, q_tot: Any, target_q_tot: Any, reward: Any, terminated: Any, mask: Any,
                 gamma: float) -> tuple[Any, Any]:
    """QMIX's masked TD loss over padded episodes (Rashid et al. 2018, Section 4:
    ``L = sum_b (y_tot - Q_tot(tau, u, s))^2`` with ``y_tot = r + gamma * Q_tot^-(tau', u', s')``).

    ``y = r + gamma * (1 - terminated) * target_q_tot`` (no gradient), ``delta = (y - q_tot) * mask``;
    ``loss = sum(delta^2) / sum(mask)`` and ``mean_td_error = sum(delta) / sum(mask)`` (PARL's reductions: the
    mean over the real transitions of the batch).

    Args:
        q_tot: float32 ``[B, T, 1]``: the mixer's ``Q_tot`` of the actions taken (with gradient).
        target_q_tot: float32 ``[B, T, 1]``: the target mixer's ``Q_tot`` of the next steps' bootstrap values.
        reward: float32 ``[B, T, 1]``: team rewards.
        terminated: float32 ``[B, T, 1]``: 1 where the transition ended the episode (no bootstrap).
        mask: float32 ``[B, T, 1]``: 1 on the transitions that count, 0 on padding.
        gamma: the discount.

    Returns:
        ``(loss, mean_td_error)``, float32 scalars.

    Raises:
        ValueError: the five tensors do not share one shape ``[B, T, 1]``.
    """
    del ops  # (tensor operators only)
    same_shape("q_tot, target_q_tot, reward, terminated and mask", q_tot, target_q_tot, reward, terminated, mask)
    if q_tot.ndim != 3 or q_tot.shape[2] != 1:
        raise ValueError(f"qmix_td_loss expects [B, T, 1] tensors, got {tuple(q_tot.shape)}")
    target = reward + gamma * (1 - terminated) * target_q_tot
    masked_td_error = (target.detach() - q_tot) * mask
    count = mask.sum()
    return (masked_td_error ** 2).sum() / count, masked_td_error.sum() / count


class _Hidden:
    __slots__ = ("hidden_states", "target_hidden_states")

    def __init__(self) -> None:
        self.hidden_states: Any = None
        self.target_hidden_states: Any = None


class ActingHiddenState:
    """PARL's acting-state attributes of QMIX, ``hidden_states`` and ``target_hidden_states``, held outside the
    algorithm's own attributes (``Algorithm.state_dict`` saves every tensor attribute; the acting state of an
    episode in progress is not part of a checkpoint). PARL's agents set them through ``_init_hidden_states`` and
    write back the state ``predict_local_q`` returns."""

    def _acting(self) -> _Hidden:
        holder = self.__dict__.get("_acting_hidden")
        if holder is None:
            holder = self.__dict__["_acting_hidden"] = _Hidden()
        return holder

    @property
    def hidden_states(self) -> Any:
        """The acting hidden state ``[batch_size, n_agents, hidden]`` after ``_init_hidden_states``, then what the
        agent stores (``[batch_size * n_agents, hidden]``); ``None`` before."""
        return self._acting().hidden_states

    @hidden_states.setter
    def hidden_states(self, value: Any) -> None:
        self._acting().hidden_states = value

    @property
    def target_hidden_states(self) -> Any:
        """The target network's hidden state set by ``_init_hidden_states`` (PARL's attribute)."""
        return self._acting().target_hidden_states

    @target_hidden_states.setter
    def target_hidden_states(self, value: Any) -> None:
        self._acting().target_hidden_states = value


class QMIX(ActingHiddenState):
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
        agent_model: the agents' shared recurrent Q network (a ``parl.Model`` of the class's framework).
        qmixer_model: the mixing network.
        double_q: Double-Q targets (the online agent network picks the next action, the target one values it).
        gamma: discount in ``[0, 1]``.
        lr: RMSprop learning rate (alpha 0.99, eps 1e-5 added to the root: PARL's torch and PyMARL's
            ``torch.optim.RMSprop``; on paddle :class:`parl_algorithms.paddle.rmsprop.RMSprop`).
        clip_grad_norm: clip the global gradient norm of both networks to this value; ``None`` does not.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Attributes:
        target_agent_model, target_qmixer_model: the target networks (``copy.deepcopy``; :meth:`sync_target`).
        n_agents: ``qmixer_model.n_agents``.
        hidden_states: the acting hidden state set by :meth:`_init_hidden_states` (PARL's agents read and write it).
        last_info: ``train/q_tot_mean``, ``train/target_mean``, ``train/grad_norm`` (with a clip) of the last
            ``learn``.

    Raises:
        TypeError: a model is not a ``parl.Model`` of the class's framework.
        ValueError: ``agent_model`` lacks ``init_hidden`` / ``forward``, ``qmixer_model`` lacks ``forward`` or an
            int ``n_agents``, or a hyperparameter is out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, agent_model: Any, qmixer_model: Any, double_q: bool = True, gamma: float = 0.99,
                 lr: float = 0.0005, clip_grad_norm: float | None = None, *, device: Any = None) -> None:
        self._check_model(agent_model, "agent_model")
        self._check_model(qmixer_model, "qmixer_model")
        super().__init__(None, device=device)
        check_model_method(agent_model, "init_hidden", "QMIX")
        check_model_method(agent_model, "forward", "QMIX")
        check_model_method(qmixer_model, "forward", "QMIX")
        self.n_agents = qmixer_n_agents(qmixer_model)
        hp = qmix_hyperparameters(double_q, gamma, lr, clip_grad_norm)
        self.double_q, self.gamma, self.lr, self.clip_grad_norm = (hp["double_q"], hp["gamma"], hp["lr"],
                                                                   hp["clip_grad_norm"])
        self.agent_model = self._placed(agent_model, device)
        self.qmixer_model = self._placed(qmixer_model, device)
        self.target_agent_model = copy.deepcopy(self.agent_model)
        self.target_qmixer_model = copy.deepcopy(self.qmixer_model)
        for target in (self.target_agent_model, self.target_qmixer_model):
            self.ops.freeze(target.parameters())
        self.optimizer = self._rmsprop(list(self.agent_model.parameters()) + list(self.qmixer_model.parameters()))
        self.last_info: dict[str, float] = {}

    # -- what each backend defines ------------------------------------------------------------------
    @staticmethod
    def _check_model(model: Any, role: str) -> None:
        """Raise ``TypeError`` naming the fix unless ``model`` (the ``role`` argument) is this framework's model."""
        raise NotImplementedError

    def _placed(self, model: Any, device: Any) -> Any:
        """``model`` on the algorithm's device (``device``: the constructor's argument)."""
        raise NotImplementedError

    def _rmsprop(self, params: list[Any]) -> Any:
        """RMSprop over ``params``: ``lr``, alpha 0.99, eps 1e-5 added to the root, the ``clip_grad_norm`` clip."""
        raise NotImplementedError

    # -- acting (PARL's agents) ---------------------------------------------------------------------
    def _initial_hidden(self, model: Any, batch_size: int) -> Any:
        return model.init_hidden().unsqueeze(0).expand([batch_size, self.n_agents, -1])

    def _init_hidden_states(self, batch_size: int) -> None:
        """Zero the acting hidden states for ``batch_size`` episodes: ``[batch_size, n_agents, hidden]`` (PARL)."""
        self.hidden_states = self._initial_hidden(self.agent_model, batch_size)
        self.target_hidden_states = self._initial_hidden(self.target_agent_model, batch_size)

    def predict_local_q(self, obs: Any, hidden_state: Any) -> tuple[Any, Any]:
        """One step of the agent network, without autograd: ``agent_model(obs, hidden_state)``.

        Args:
            obs: float32 ``[n_agents, obs_dim]`` (one episode) or ``[E * n_agents, obs_dim]`` (E episodes,
                agent-minor).
            hidden_state: float32 ``[E, n_agents, hidden]`` or ``[E * n_agents, hidden]``.

        Returns:
            ``(q float32 [E * n_agents, n_actions], next hidden state [E * n_agents, hidden])``; mask the
            unavailable actions before the argmax.
        """
        ops = self.ops
        obs, hidden_state = ops.to_device(self.device, obs, hidden_state)
        with ops.no_grad():
            return self.agent_model(ops.as_float(obs, "obs"), ops.as_float(hidden_state, "hidden_state"))

    # -- learning -----------------------------------------------------------------------------------
    def _unroll(self, model: Any, obs: Any) -> Any:
        """``model``'s Q values of every step, float32 ``[B, T, n_agents, n_actions]``, from the initial state."""
        batch, steps, n_agents, obs_dim = obs.shape
        hidden = self._initial_hidden(model, batch)
        qs = []
        for t in range(steps):
            q, hidden = model(obs[:, t].reshape([batch * n_agents, obs_dim]), hidden)
            qs.append(q.reshape([batch, n_agents, -1]).unsqueeze(1))
        return self.ops.concat(qs, 1)

    def _host(self, value: Any) -> Any:
        """A numpy view / copy of a tensor or array-like (for the batch checks)."""
        if isinstance(value, self.ops.Tensor):
            return self.ops.to_numpy(value)
        return value if value is None or hasattr(value, "shape") else np.asarray(value)

    def learn(self, state_batch: Any, actions_batch: Any, reward_batch: Any, terminated_batch: Any, obs_batch: Any,
              available_actions_batch: Any, filled_batch: Any) -> tuple[float, float]:
        """One RMSprop step on the masked TD loss of a batch of padded episodes (PARL's arguments and returns).

        Args:
            state_batch: float32 ``[B, T, state_dim]``.
            actions_batch: int ``[B, T, n_agents]``: the actions taken (available ones).
            reward_batch: float32 ``[B, T, 1]``: team reward of step t.
            terminated_batch: 0/1 ``[B, T, 1]``: step t ended the episode (a terminal, not a time limit).
            obs_batch: float32 ``[B, T, n_agents, obs_dim]``.
            available_actions_batch: 0/1 ``[B, T, n_agents, n_actions]``.
            filled_batch: 0/1 ``[B, T, 1]``: 0 on the real steps, 1 on the padding after an episode's end.
                (numpy arrays or tensors; the layout is the module's.)

        Returns:
            ``(loss, mean_td_error)`` as Python floats: the mean squared and the mean masked TD error over the
            real transitions.

        Raises:
            ValueError: see :func:`check_episode_batch` (missing masks, wrong padding, agent counts that differ,
                unavailable / continuous actions, shapes), or the agent network's output does not have
                ``n_actions`` columns.
        """
        ops = self.ops
        arrays = dict(zip(BATCH_NAMES, (state_batch, actions_batch, reward_batch, terminated_batch, obs_batch,
                                        available_actions_batch, filled_batch), strict=True))
        batch, steps, n_actions = check_episode_batch({k: self._host(v) for k, v in arrays.items()}, self.n_agents)
        tensor = dict(zip(arrays, ops.to_device(self.device, *arrays.values()), strict=True))
        state, obs, reward, terminated, filled = (
            ops.as_float(tensor[k], k) for k in ("state_batch", "obs_batch", "reward_batch", "terminated_batch",
                                                 "filled_batch"))
        actions = ops.as_int64(tensor["actions_batch"], self.device)
        available = ops.as_float(tensor["available_actions_batch"], "available_actions_batch") != 0

        local_qs = self._unroll(self.agent_model, obs)  # [B, T, n_agents, n_actions]
        if local_qs.shape[3] != n_actions:
            raise ValueError(f"QMIX.learn: agent_model returns {local_qs.shape[3]} Q values per agent but "
                             f"available_actions_batch has n_actions={n_actions}; build the agent network with the "
                             "env's n_actions outputs")
        chosen_local_qs = ops.take_along_axis(local_qs[:, :-1], actions[:, :-1].unsqueeze(3), 3).squeeze(3)
        q_tot = self.qmixer_model(chosen_local_qs, state[:, :-1])
        with ops.no_grad():
            target_local_qs = self._unroll(self.target_agent_model, obs)[:, 1:]
            online_next = local_qs.detach()[:, 1:] if self.double_q else None
            target_max_qs = qmix_target_max_q(ops, target_local_qs, available[:, 1:], online_next)
            target_q_tot = self.target_qmixer_model(target_max_qs, state[:, 1:])
        mask = transition_mask(filled)
        loss, mean_td_error = qmix_td_loss(ops, q_tot, target_q_tot, reward[:, :-1], terminated[:, :-1], mask,
                                           self.gamma)
        clipped = self.clip_grad_norm is not None
        grad_norm = ops.step(self.optimizer, loss, self.clip_grad_norm, return_norm=clipped)
        count = mask.sum()
        info = {"train/q_tot_mean": ops.info_scalar((q_tot.detach() * mask).sum() / count),
                "train/target_mean": ops.info_scalar((target_q_tot * mask).sum() / count)}
        if clipped:
            info["train/grad_norm"] = ops.info_scalar(grad_norm)
        self.last_info = info
        return ops.host_floats(loss, mean_td_error)

    def sync_target(self) -> None:
        """Copy the agent network and the mixer into their target networks (PARL paddle's ``sync_target``)."""
        self.agent_model.sync_weights_to(self.target_agent_model)
        self.qmixer_model.sync_weights_to(self.target_qmixer_model)

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (see ``last_info``)."""
        return dict(self.last_info)
