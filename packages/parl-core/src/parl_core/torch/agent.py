"""``Agent``: the numpy bridge between an environment and an ``Algorithm``."""

from __future__ import annotations

import os
import pickle
import re
from typing import Any, BinaryIO

import numpy as np
import torch

from parl_core._agent_base import CHECKPOINT_FORMAT, STATE_SUFFIX, AgentBase, UnreadableCheckpoint
from parl_core.torch.algorithm import Algorithm
from parl_core.torch.model import Model

__all__ = ["CHECKPOINT_FORMAT", "STATE_SUFFIX", "Agent"]


def _to_tensor(value: Any, name: str, device: torch.device) -> Any:
    """numpy -> tensor on ``device``, number -> 0-d CPU tensor (float64 becomes float32); tensors are moved to
    ``device``; other objects pass through."""
    if isinstance(value, torch.Tensor):
        return value if value.device == device else value.to(device)
    if isinstance(value, (np.ndarray, np.generic, int, float, bool, list)):
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
            raise TypeError(f"{name} must be a numeric numpy array, got dtype {array.dtype}; "
                            "convert it with np.asarray(x, dtype=np.float32)")
        # a number stays a CPU scalar: torch combines 0-d CPU tensors with tensors on any device without a copy,
        # and a learning rate / epsilon read back with float() costs no device round trip
        return torch.as_tensor(array, device=device if array.ndim else None)
    return value


def _write(obj: Any, file: BinaryIO) -> None:
    torch.save(obj, file)


def _reader(map_location: Any):
    def read(path: str) -> Any:
        """``torch.load(weights_only=True)``: tensors and plain containers only; nothing in the file runs."""
        try:
            return torch.load(path, map_location=map_location, weights_only=True)
        except pickle.UnpicklingError as exc:
            found = re.search(r"unsupported global:?\s+(?:GLOBAL\s+)?([\w.]+)", str(exc), re.IGNORECASE)
            if found is None:
                raise  # described by the caller from the file's first bytes, never with torch's text
            raise UnreadableCheckpoint(f"it references {found.group(1)}, which a checkpoint holding tensors and "
                                       "plain containers never does; it is not unpickled, as that could run code "
                                       "the file chooses") from None
    return read


def _to_numpy(value: Any) -> Any:
    """tensor -> numpy (0-d tensors -> Python numbers); containers are converted element-wise."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.item() if value.ndim == 0 else value.numpy()
    if isinstance(value, tuple):
        return tuple(_to_numpy(v) for v in value)
    if isinstance(value, list):
        return [_to_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    return value


class Agent(AgentBase):
    """Bridge between the environment and an algorithm: numpy in, numpy out.

    Subclasses usually override ``learn`` / ``predict`` / ``sample`` to add preprocessing (as PARL's
    examples do); the defaults convert every numpy argument to a tensor on the algorithm's device
    (float64 becomes float32), call the algorithm's method, and convert tensors in the result back to
    numpy (0-d tensors to Python numbers).

    ``predict`` / ``sample`` run under ``torch.no_grad()``, the defaults and a subclass's own alike (PARL's
    ``class CartpoleAgent(parl.Agent)``); set ``no_grad_methods = ()`` in the subclass to keep autograd there
    (see :attr:`no_grad_methods`). ``learn`` runs with gradients.

    Args:
        algorithm: the algorithm to drive.

    Raises:
        TypeError: ``algorithm`` is not a ``parl.Algorithm``, or its ``model`` is not a ``parl.Model``.
    """

    _no_grad = staticmethod(torch.no_grad)

    def __init__(self, algorithm: Algorithm) -> None:
        if not isinstance(algorithm, Algorithm):
            raise TypeError(f"{type(self).__name__} expects a parl.Algorithm, got {type(algorithm).__name__}")
        model = getattr(algorithm, "model", None)
        if model is not None and not isinstance(model, Model):
            # PARL-style algorithms often set self.model without calling Algorithm.__init__.
            raise TypeError(f"{type(algorithm).__name__}.model is a {type(model).__name__}, not a parl.Model; "
                            "define the network as `class MyModel(parl.Model)`")
        self.alg = algorithm
        self.training = True

    # -- numpy <-> tensor ------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        """The device that this agent puts tensors on, by default the device of the algorithm's main model.

        It is the algorithm's ``device`` when it has one, else the device of the main model's parameters, else
        the CPU.

        PARL's ``Agent`` has no such property and PARL user agents set their own
        (``self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``): assigning it
        is allowed and overrides the default for this agent's conversions.
        """
        device = self.__dict__.get("_device") or getattr(self.alg, "device", None)
        if device is not None:
            return torch.device(device)
        model = self.alg.model
        for param in model.parameters() if model is not None else ():
            return param.device
        return torch.device("cpu")

    @device.setter
    def device(self, value: str | torch.device | None) -> None:
        self.__dict__["_device"] = None if value is None else torch.device(value)

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        device = self.device
        args = tuple(_to_tensor(a, f"argument {i} of {method}()", device) for i, a in enumerate(args))
        kwargs = {k: _to_tensor(v, f"argument {k!r} of {method}()", device) for k, v in kwargs.items()}
        grad = torch.enable_grad() if method == "learn" else torch.no_grad()
        with grad:
            return _to_numpy(getattr(self.alg, method)(*args, **kwargs))

    # -- checkpoints -----------------------------------------------------------------------------
    def save(self, save_path: str | os.PathLike, model: Model | None = None) -> None:
        """Save a checkpoint: PARL's model file at ``save_path`` and the full training state beside it.

        ``save_path`` receives exactly what PARL 2.x writes, ``torch.save(self.alg.model.state_dict(), save_path)``,
        so code that loads it without the agent works (``model.load_state_dict(torch.load(save_path))``,
        PARL's AlphaZero ``gen_submission.py``). ``save_path + ".state"`` (:data:`STATE_SUFFIX`) receives,
        with ``torch.save``, ``{"format": CHECKPOINT_FORMAT, "algorithm": class name, "state":
        self.alg.state_dict(), "main_sha256": SHA-256 hex digest of the bytes at save_path, "replaces_sha256":
        that of the model file this save replaced (None if none)}``: every model (target networks included),
        optimizer, LR scheduler and tensor of the algorithm, so that :meth:`restore` resumes training exactly.
        Parent directories are created.

        An algorithm without ``self.model`` (QMIX) writes that full-state dict at ``save_path`` itself, and
        no sidecar.

        Crash-safe: each file is written under a temporary name and renamed into place, the sidecar (which
        also records the digest of the model file it replaces) first; a process killed at any moment leaves
        a checkpoint that :meth:`restore` loads whole, from the previous save or this one (see
        :mod:`parl_core._agent_base`). Temporary files of a killed save are deleted by the next save.

        Args:
            save_path: the file to write.
            model: if given, save only this model's ``state_dict`` at ``save_path`` (PARL's behaviour) and
                delete a ``save_path + ".state"`` left by an earlier ``save(save_path)``.

        Raises:
            TypeError: ``model`` is not a torch ``parl.Model``.
            OSError: a file cannot be written (the checkpoint at ``save_path`` is then the previous one).
        """
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"save(model=...) expects a parl.Model, got {type(model).__name__}")
        self._save_checkpoint(save_path, model, _write)

    def restore(self, save_path: str | os.PathLike, model: Model | None = None,
                map_location: Any = None) -> None:
        """Load a checkpoint written by :meth:`save`, or a PARL 2.x model file.

        Without ``model``: when ``save_path + ".state"`` exists and its digest matches the file at
        ``save_path`` (or the file it replaced, when a save was killed between its two renames), the whole
        algorithm is restored from it (models, optimizer moments, schedulers, tensors);
        with no such sidecar, the ``state_dict`` at ``save_path`` is loaded into ``self.alg.model`` (PARL's
        behaviour); when the sidecar is stale (``save_path`` was rewritten by other code since ``save``),
        the weights at ``save_path`` are loaded into ``self.alg.model`` and a ``UserWarning`` names what was
        not restored. A single file in the full format (written by versions before the sidecar) restores
        everything.

        Args:
            save_path: the file written by ``save``.
            model: if given, load the ``state_dict`` at ``save_path`` into this model (PARL's behaviour); the
                sidecar is not read.
            map_location: passed to ``torch.load``; default :attr:`device`, so a checkpoint written on a GPU
                restores on a CPU-only machine (and a CPU one onto the GPU) without arguments.

        Files are read with ``torch.load(weights_only=True)``: tensors and plain containers only, so no code
        in the file runs. A refused file leaves the agent exactly as it was.

        Raises:
            FileNotFoundError: ``save_path`` does not exist.
            ValueError: the file (or the sidecar) is empty, truncated, corrupt, not a torch checkpoint,
                references objects other than tensors and containers, or is of another checkpoint format
                version; the file does not fit this agent's models (keys / shapes); ``model`` is given for a
                full-state file; or ``save_path + ".state"`` is not a state file written by ``save``. The
                message names the file, what is wrong and what to do.
        """
        if map_location is None:
            map_location = self.device
        self._restore_checkpoint(save_path, model, _reader(map_location))
