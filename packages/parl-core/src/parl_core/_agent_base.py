"""What ``Agent`` means on every backend: numpy in, numpy out around the algorithm, weights, modes, checkpoints.

``parl_core.torch.Agent`` and ``parl_core.paddle.Agent`` subclass :class:`AgentBase` and add their
framework's tensor conversion (``_call``) and file functions (``torch.save`` / ``paddle.save``); the
checkpoint layout (PARL's model file plus a full-state sidecar) is decided here, once for both; this
module imports no deep-learning framework.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

__all__ = ["CHECKPOINT_FORMAT", "STATE_SUFFIX", "AgentBase"]

CHECKPOINT_FORMAT = "parl-checkpoint-v1"
"""The ``"format"`` entry of a full-state checkpoint (the sidecar, or a whole file written before the sidecar)."""

STATE_SUFFIX = ".state"
"""``agent.save(path)`` writes the full training state to ``path + STATE_SUFFIX``, beside PARL's model file."""


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _is_full(checkpoint: Any) -> bool:
    return isinstance(checkpoint, dict) and checkpoint.get("format") == CHECKPOINT_FORMAT


def _without_grad(function: Callable[..., Any], no_grad: Callable[[], Any]) -> Callable[..., Any]:
    """``function`` run under ``no_grad()``; name, docstring and signature are ``function``'s (``__wrapped__``)."""

    @functools.wraps(function)
    def without_grad(*args: Any, **kwargs: Any) -> Any:
        with no_grad():
            return function(*args, **kwargs)

    without_grad.__parl_no_grad__ = True  # type: ignore[attr-defined]
    return without_grad


def _wrappable(value: Any) -> bool:
    """A plain function (not a generator / coroutine, whose body would run after the ``with`` had ended)."""
    return (inspect.isfunction(value) and not inspect.isgeneratorfunction(value)
            and not inspect.iscoroutinefunction(value) and not inspect.isasyncgenfunction(value))


class AgentBase:
    """Framework-neutral half of ``Agent``: ``learn`` / ``predict`` / ``sample``, weights, train / eval.

    Acting without autograd: the methods named in :attr:`no_grad_methods` (``predict`` and ``sample``) that an
    ``Agent`` subclass defines itself run without gradients (``torch.no_grad()`` / ``paddle.no_grad()``), as
    the default ``predict`` / ``sample`` do: a PARL agent's ``predict(obs)`` calls
    ``self.alg.predict(to_tensor(obs))`` and returns numpy, so autograd's bookkeeping there is pure cost
    (about a quarter of a small network's forward pass). The wrapper keeps the method's name, docstring and
    signature (``functools.wraps``; the original is ``__wrapped__``) and restores the caller's grad mode when
    the method returns or raises, so a ``predict`` called inside ``learn`` leaves ``learn`` differentiating.
    ``learn`` and every other method are untouched. Generator and ``async`` methods, ``staticmethod`` and
    ``classmethod`` objects are left as they are.
    """

    no_grad_methods: ClassVar[tuple[str, ...]] = ("predict", "sample")
    """Methods that run without autograd when an ``Agent`` subclass defines them (see the class docstring).

    A subclass sets its own tuple to change that for itself and its subclasses: ``no_grad_methods = ()``
    keeps autograd in its ``predict`` / ``sample`` (e.g. a ``sample`` whose result is differentiated), and
    a subclass that inherits a wrapped method but leaves its name out of the tuple gets the unwrapped
    original. This differs from PARL 2.x, whose ``Agent`` runs user methods with autograd on.
    """

    # the backend's "no gradients" context manager (torch.no_grad / paddle.no_grad); None: nothing is wrapped
    _no_grad: ClassVar[Callable[[], Any] | None] = None

    alg: Any
    training: bool

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = cls.no_grad_methods
        if isinstance(names, str) or not isinstance(names, (tuple, list, frozenset, set)) or not all(
                isinstance(name, str) for name in names):
            raise TypeError(f"{cls.__name__}.no_grad_methods must be a tuple of method names, e.g. "
                            f"('predict', 'sample'), or () to keep autograd; got {names!r}")
        no_grad = cls._no_grad
        if no_grad is None:
            return
        inherited = {name for klass in cls.__mro__[1:] for name, value in vars(klass).items()
                     if getattr(value, "__parl_no_grad__", False)}
        for name in set(names) | inherited:
            owner = next((klass for klass in cls.__mro__ if name in vars(klass)), None)
            if owner is None or owner is AgentBase or "_no_grad" in vars(owner):
                continue  # not defined, or the backend Agent's own method (already without gradients)
            value = vars(owner)[name]
            wrapped = getattr(value, "__parl_no_grad__", False)
            if name in names and not wrapped and _wrappable(value):
                setattr(cls, name, _without_grad(value, no_grad))
            elif name not in names and wrapped:
                setattr(cls, name, value.__wrapped__)  # this class opted out: the inherited original runs

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        """Run ``self.alg.<method>`` on tensors made from ``args`` / ``kwargs``; return numpy (per backend)."""
        raise NotImplementedError

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``self.alg.learn`` with numpy arguments converted to tensors; return numpy."""
        return self._call("learn", args, kwargs)

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``self.alg.predict`` without gradients; return numpy."""
        return self._call("predict", args, kwargs)

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``self.alg.sample`` without gradients; return numpy."""
        return self._call("sample", args, kwargs)

    # -- weights ---------------------------------------------------------------------------------
    def get_weights(self) -> dict[str, np.ndarray]:
        """Weights of the algorithm's main model, ``{name: np.ndarray}`` (PARL's; see ``Algorithm.get_weights``)."""
        return self.alg.get_weights()

    def set_weights(self, weights: dict[str, Any]) -> None:
        """Load weights from ``get_weights`` or ``Algorithm.get_all_weights`` (see ``Algorithm.set_weights``)."""
        self.alg.set_weights(weights)

    # -- modes -----------------------------------------------------------------------------------
    def train(self) -> None:
        """Put every model of the algorithm in training mode (dropout, batch-norm updates)."""
        for model in self.alg.models().values():
            model.train()
        self.training = True

    def eval(self) -> None:
        """Put every model of the algorithm in evaluation mode."""
        for model in self.alg.models().values():
            model.eval()
        self.training = False

    # -- checkpoints (the layout; each backend passes its save / load functions) ----------------
    def _save_checkpoint(self, save_path: str | os.PathLike, model: Any, write: Callable[[Any, str], None]) -> None:
        """Write PARL's file at ``save_path`` and, for ``model=None``, the full state beside it (see ``Agent.save``)."""
        save_path = os.fspath(save_path)
        parent = os.path.dirname(save_path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        sidecar = save_path + STATE_SUFFIX
        main = model if model is not None else getattr(self.alg, "model", None)
        if main is None:
            # no main model (QMIX: agent_model + qmixer_model): PARL's save would fail; the file is the whole state
            write(self._full_state(), save_path)
            _remove(sidecar)
            return
        write(main.state_dict(), save_path)
        if model is not None:
            _remove(sidecar)  # else a later restore(save_path) would apply the state of an earlier save(save_path)
            return
        state = self._full_state()
        state["main_sha256"] = _sha256(save_path)
        partial = sidecar + ".partial"
        write(state, partial)
        os.replace(partial, sidecar)  # a crash mid-write leaves the old sidecar, whose digest then does not match

    def _full_state(self) -> dict[str, Any]:
        return {"format": CHECKPOINT_FORMAT, "algorithm": type(self.alg).__name__, "state": self.alg.state_dict()}

    def _restore_checkpoint(self, save_path: str | os.PathLike, model: Any, read: Callable[[str], Any]) -> None:
        """Load what :meth:`_save_checkpoint` wrote, or a PARL model file, or a full file of an earlier version."""
        save_path = os.fspath(save_path)
        if not os.path.isfile(save_path):
            raise FileNotFoundError(f"no checkpoint at {save_path!r}; write one with agent.save({save_path!r}) "
                                    "or check the path")
        sidecar = save_path + STATE_SUFFIX
        stale = None
        if model is None and os.path.isfile(sidecar):
            full = read(sidecar)
            if not (_is_full(full) and "main_sha256" in full):
                raise ValueError(f"{sidecar!r} is not the state file agent.save({save_path!r}) writes; move it away "
                                 f"(a file named path + {STATE_SUFFIX!r} is read by agent.restore(path))")
            if full["main_sha256"] == _sha256(save_path):
                self.alg.load_state_dict(full["state"])
                return
            stale = full
        checkpoint = read(save_path)
        if _is_full(checkpoint):  # the whole state in one file: no main model, or written before the sidecar
            if model is not None:
                raise ValueError(f"{save_path!r} is a full agent checkpoint; call restore(path) without "
                                 "model=, or save a single model with save(path, model)")
            self.alg.load_state_dict(checkpoint["state"])
            return
        target = model if model is not None else getattr(self.alg, "model", None)
        if target is None:
            raise ValueError(f"{save_path!r} holds one model's weights and {type(self.alg).__name__} has no "
                             "self.model to load them into; pass the model: restore(path, model=agent.alg.<name>)")
        target.set_weights(checkpoint)
        if stale is not None:
            left = sorted(key for key in stale["state"] if key != "model")
            warnings.warn(f"{save_path!r} was replaced after agent.save wrote {sidecar!r} (their SHA-256 digests "
                          f"differ): loaded {save_path!r} into {type(self.alg).__name__}.model only; not restored "
                          f"from the stale {sidecar!r}: {', '.join(left) or 'nothing else'}. Save again (or delete "
                          f"{sidecar!r}) to silence this", stacklevel=3)
