"""What ``Agent`` means on every backend: numpy in, numpy out around the algorithm, weights, modes, checkpoints.

``parl_core.torch.Agent`` and ``parl_core.paddle.Agent`` subclass :class:`AgentBase` and add their
framework's tensor conversion (``_call``) and file functions (``torch.save`` / ``paddle.save``); the
checkpoint layout (PARL's model file plus a full-state sidecar) is decided here, once for both; this
module imports no deep-learning framework.

Crash-safe checkpoints. ``agent.save(path)`` writes two files: PARL's model file at ``path`` (the main
model's ``state_dict``, what PARL 2.x writes) and the sidecar ``path + ".state"`` (the full training state,
main model included, with ``main_sha256``: the SHA-256 digest of the new model file's bytes, and
``replaces_sha256``: the digest of the model file it replaces, ``None`` when there was none). Both are
written under temporary names, fsync-ed, then renamed (:func:`parl_core.utils.atomic.atomic_write_many`),
the sidecar first: its rename is the commit. A process killed at any moment leaves one of three pairs:

- old sidecar + old model file (killed before the commit): the previous save, whole;
- new sidecar + old model file (killed between the two renames): the model file's digest is the new
  sidecar's ``replaces_sha256``, so ``restore`` loads the new sidecar, which holds the whole new state;
- new sidecar + new model file: the new save, whole.

``restore`` loads the sidecar when the model file's digest is its ``main_sha256`` or its
``replaces_sha256``; any other model file was written by other code after the save (PARL's ``torch.save``,
a conversion script), and is loaded into ``alg.model`` alone, with a warning. Temporary files a kill leaves
are never read and are deleted by the next save to the same path. A single-file save (``save(path,
model)``, an algorithm without ``self.model``) replaces ``path`` atomically, then deletes the sidecar.

Refusals. A file that is missing, empty, truncated, not a checkpoint, of another format version, or that
does not fit the agent (keys / shapes) raises ``FileNotFoundError`` / ``ValueError`` naming the file, what
is wrong and what to do; the algorithm is left exactly as it was (a load failing part-way is undone).
Framework loaders' messages are not passed on: torch's suggests ``weights_only=False``, which would run
whatever code the file carries.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import io
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, ClassVar

import numpy as np

from parl_core.utils.atomic import atomic_remove, atomic_write, atomic_write_many

__all__ = ["CHECKPOINT_FORMAT", "STATE_SUFFIX", "AgentBase", "UnreadableCheckpoint"]

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
    def _save_checkpoint(self, save_path: str | os.PathLike, model: Any,
                         write: Callable[[Any, BinaryIO], None]) -> None:
        """Write PARL's file at ``save_path`` and, for ``model=None``, the full state beside it (see the module
        docstring for the crash-safe order). ``write(obj, file)`` serialises ``obj`` into an open binary file."""
        save_path = os.fspath(save_path)
        parent = os.path.dirname(save_path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        sidecar = save_path + STATE_SUFFIX
        _remove(sidecar + ".partial")  # left by a save of parl-core 3.0 killed mid-write
        main = model if model is not None else getattr(self.alg, "model", None)
        if main is None:
            # no main model (QMIX: agent_model + qmixer_model): PARL's save would fail; the file is the whole state
            with atomic_write(save_path) as file:
                write(self._full_state(), file)
            atomic_remove(sidecar)
            return
        if model is not None:
            with atomic_write(save_path) as file:
                write(main.state_dict(), file)
            atomic_remove(sidecar)  # else a later restore(save_path) would apply the state of an earlier save(path)
            return
        buffer = io.BytesIO()
        write(main.state_dict(), buffer)
        main_bytes = buffer.getvalue()
        state = self._full_state()
        state["main_sha256"] = hashlib.sha256(main_bytes).hexdigest()
        state["replaces_sha256"] = _sha256(save_path) if os.path.isfile(save_path) else None
        # the sidecar is renamed first: it is the commit record (see the module docstring)
        with atomic_write_many([sidecar, save_path]) as (sidecar_file, main_file):
            write(state, sidecar_file)
            main_file.write(main_bytes)

    def _full_state(self) -> dict[str, Any]:
        return {"format": CHECKPOINT_FORMAT, "algorithm": type(self.alg).__name__, "state": self.alg.state_dict()}

    def _load_state(self, state: Any, source: str) -> None:
        """``self.alg.load_state_dict(state)``; on failure the algorithm is put back as it was and the error names
        ``source``."""
        self._guarded(lambda: self.alg.load_state_dict(state), source, "restore it into an agent built like the one "
                      "that saved it (same algorithm, same model architecture)")

    def _guarded(self, load: Callable[[], None], source: str, fix: str) -> None:
        before = copy.deepcopy(self.alg.state_dict())
        try:
            load()
        except (ValueError, TypeError, KeyError, RuntimeError) as exc:
            self.alg.load_state_dict(before)  # a load that failed part-way leaves nothing half-applied
            raise ValueError(f"cannot restore {source!r}: {exc}; {fix}") from None

    def _restore_checkpoint(self, save_path: str | os.PathLike, model: Any, read: Callable[[str], Any]) -> None:
        """Load what :meth:`_save_checkpoint` wrote, or a PARL model file, or a full file of an earlier version.

        ``read(path)`` returns the file's object; it may raise :class:`UnreadableCheckpoint` with a reason,
        or any exception of the framework's loader (classified here, never passed on with its text).
        """
        save_path = os.fspath(save_path)
        sidecar = save_path + STATE_SUFFIX
        has_main = os.path.isfile(save_path)
        stale = None
        if model is None and os.path.isfile(sidecar):
            full = _read_checkpoint(sidecar, read, f"agent.restore({save_path!r}) reads it as the full training "
                                    f"state beside {save_path!r}; move it away to restore the model weights of "
                                    f"{save_path!r} alone, or restore an earlier checkpoint")
            _check_version(full, sidecar)
            if not (_is_full(full) and "main_sha256" in full):
                raise ValueError(f"{sidecar!r} is not the state file agent.save({save_path!r}) writes; move it away "
                                 f"(a file named path + {STATE_SUFFIX!r} is read by agent.restore(path))")
            digest = _sha256(save_path) if has_main else None
            if full["main_sha256"] == digest or ("replaces_sha256" in full and full["replaces_sha256"] == digest):
                # the pair agent.save wrote, or a save stopped after its commit (the sidecar is whole on its own)
                self._load_state(full["state"], sidecar)
                return
            stale = full
        if not has_main:
            raise FileNotFoundError(f"no checkpoint at {save_path!r}; write one with agent.save({save_path!r}) "
                                    "or check the path")
        checkpoint = _read_checkpoint(save_path, read, "restore an earlier checkpoint, or save again")
        _check_version(checkpoint, save_path)
        if _is_full(checkpoint):  # the whole state in one file: no main model, or written before the sidecar
            if model is not None:
                raise ValueError(f"{save_path!r} is a full agent checkpoint; call restore(path) without "
                                 "model=, or save a single model with save(path, model)")
            self._load_state(checkpoint["state"], save_path)
            return
        target = model if model is not None else getattr(self.alg, "model", None)
        if target is None:
            raise ValueError(f"{save_path!r} holds one model's weights and {type(self.alg).__name__} has no "
                             "self.model to load them into; pass the model: restore(path, model=agent.alg.<name>)")
        if not isinstance(checkpoint, Mapping):
            raise ValueError(f"cannot restore {save_path!r}: it holds a {type(checkpoint).__name__}, not a model's "
                             "state_dict (a dict name -> tensor) nor a checkpoint written by agent.save; restore a "
                             "file written by agent.save or torch.save / paddle.save(model.state_dict(), path)")
        self._guarded(lambda: target.set_weights(checkpoint), save_path,
                      f"restore it into a model of the architecture that saved it ({type(target).__name__} here)")
        if stale is not None:
            left = sorted(key for key in stale["state"] if key != "model")
            warnings.warn(f"{save_path!r} was replaced after agent.save wrote {sidecar!r} (their SHA-256 digests "
                          f"differ): loaded {save_path!r} into {type(self.alg).__name__}.model only; not restored "
                          f"from the stale {sidecar!r}: {', '.join(left) or 'nothing else'}. Save again (or delete "
                          f"{sidecar!r}) to silence this", stacklevel=3)


class UnreadableCheckpoint(Exception):
    """Raised by a backend's ``read`` with a reason (e.g. "it references os.system, ..."); turned into a
    ``ValueError`` naming the file by :meth:`AgentBase._restore_checkpoint`."""


_ZIP_MAGIC = b"PK\x03\x04"
_PICKLE_MAGIC = b"\x80"


def _describe_unreadable(path: str, exc: BaseException) -> str:
    """Why ``path`` could not be read, in words (never the loader's text, which may advise an unsafe load)."""
    if isinstance(exc, UnreadableCheckpoint):
        return str(exc)
    try:
        with open(path, "rb") as file:
            head = file.read(8)
    except OSError as err:
        return f"it cannot be opened ({err.strerror or type(err).__name__})"
    if head.startswith(_ZIP_MAGIC) or head.startswith(_PICKLE_MAGIC):
        return ("it is truncated or corrupt (it starts like a torch / paddle checkpoint but does not parse to "
                "its end)")
    return f"it is not a torch / paddle checkpoint (its first bytes are {head!r})"


def _read_checkpoint(path: str, read: Callable[[str], Any], fix: str) -> Any:
    """``read(path)``, with every failure turned into a ``ValueError`` naming ``path``, what is wrong and ``fix``."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = None
    if size == 0:
        raise ValueError(f"cannot restore {path!r}: the file is empty (0 bytes; a copy or save that stopped "
                         f"before writing, or a full disk); {fix}")
    try:
        return read(path)
    except MemoryError:
        raise
    except Exception as exc:  # any loader failure is reported in our words (see the module docstring)
        reason = _describe_unreadable(path, exc)
    raise ValueError(f"cannot restore {path!r}: {reason}; {fix}")


def _check_version(checkpoint: Any, path: str) -> None:
    """Refuse a full-state file of another format version with a message saying which and what to do."""
    if not isinstance(checkpoint, dict):
        return
    found = checkpoint.get("format")
    if isinstance(found, str) and found.startswith("parl-checkpoint-") and found != CHECKPOINT_FORMAT:
        raise ValueError(f"cannot restore {path!r}: it is in checkpoint format {found!r}, this parl-core reads "
                         f"{CHECKPOINT_FORMAT!r}; restore it with the parl-core version that wrote it (or a newer "
                         "one), or save it again from there with a model file only: agent.save(path, model=...)")
