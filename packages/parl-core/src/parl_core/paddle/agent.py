"""``Agent``: the numpy bridge between an environment and a paddle ``Algorithm``."""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Sequence
from typing import Any, BinaryIO

import numpy as np
import paddle

from parl_core._agent_base import CHECKPOINT_FORMAT, STATE_SUFFIX, AgentBase, UnreadableCheckpoint
from parl_core.paddle.algorithm import Algorithm
from parl_core.paddle.model import Model

__all__ = ["CHECKPOINT_FORMAT", "STATE_SUFFIX", "Agent"]


def _to_tensor(value: Any, name: str) -> Any:
    """numpy / number -> paddle tensor (float64 becomes float32); tensors and other objects pass through."""
    if isinstance(value, (np.ndarray, np.generic, int, float, bool, list)):
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        if array.dtype.kind not in "biufc":  # bool / int / uint / float / complex (np.issubdtype: 10x the time)
            raise TypeError(f"{name} must be a numeric numpy array, got dtype {array.dtype}; "
                            "convert it with np.asarray(x, dtype=np.float32)")
        return paddle.to_tensor(array)
    return value


def _to_numpy(value: Any) -> Any:
    """tensor -> numpy (0-d tensors -> Python numbers); containers are converted element-wise."""
    if isinstance(value, paddle.Tensor):
        array = value.numpy()  # (a copy; paddle's numpy() needs no detach(), which is one more op per call)
        return array.item() if array.ndim == 0 else array
    if isinstance(value, tuple):  # a named tuple (IMPALA's VTraceLoss) becomes a plain one, as on torch
        return tuple(_to_numpy(v) for v in value)
    if isinstance(value, list):
        return [_to_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    return value


# what paddle.save writes for a state dict (tensors become numpy arrays) and the pickles of plain containers
_SAFE_GLOBALS = frozenset({
    ("collections", "OrderedDict"),
    ("builtins", "tuple"), ("builtins", "list"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "complex"), ("_codecs", "encode"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
})


class _CheckingUnpickler(pickle.Unpickler):
    """An unpickler that builds only plain containers and numpy arrays (see :func:`_read`)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise UnreadableCheckpoint(f"it references {module}.{name}, which a paddle.save of tensors and plain "
                                   "containers never does; it is not unpickled, as that could run code the file "
                                   "chooses")


def _write(obj: Any, file: BinaryIO) -> None:
    buffer = io.BytesIO()  # paddle.save takes a path or a BytesIO, not an open file
    paddle.save(obj, buffer)
    file.write(buffer.getvalue())


def _read(path: str) -> Any:
    """``paddle.load`` of the file's bytes once they have unpickled under :class:`_CheckingUnpickler`.

    ``paddle.load`` unpickles without restriction (a crafted file runs code); the check first unpickles the
    same bytes allowing only containers and numpy arrays, and raises ``UnreadableCheckpoint`` otherwise.
    """
    with open(path, "rb") as file:
        data = file.read()
    _CheckingUnpickler(io.BytesIO(data), encoding="latin1").load()
    return paddle.load(io.BytesIO(data))


class Agent(AgentBase):
    """Bridge between the environment and a paddle algorithm: numpy in, numpy out.

    Same API as ``parl_core.torch.Agent``; the defaults convert every numpy argument to a paddle tensor
    (float64 becomes float32), call the algorithm's method (``predict`` / ``sample`` under
    ``paddle.no_grad()``), and convert tensors in the result back to numpy (0-d tensors to numbers).

    A subclass's own ``predict`` / ``sample`` (PARL's ``class CartpoleAgent(parl.Agent)``) also run under
    ``paddle.no_grad()``; set ``no_grad_methods = ()`` in the subclass to keep autograd there (see
    :attr:`no_grad_methods`). ``learn`` always runs with the caller's grad mode.

    Args:
        algorithm: the algorithm to drive, a ``parl_core.paddle.Algorithm``.

    Raises:
        TypeError: ``algorithm`` is not a paddle ``parl.Algorithm``, or its ``model`` is not a paddle
            ``parl.Model``.
    """

    _no_grad = staticmethod(paddle.no_grad)

    def __init__(self, algorithm: Algorithm) -> None:
        if not isinstance(algorithm, Algorithm):
            raise TypeError(f"{type(self).__name__} expects a parl.Algorithm (parl_core.paddle.Algorithm), "
                            f"got {type(algorithm).__name__}")
        model = getattr(algorithm, "model", None)
        if model is not None and not isinstance(model, Model):
            raise TypeError(f"{type(algorithm).__name__}.model is a {type(model).__name__}, not a parl.Model; "
                            "define the network as `class MyModel(parl.Model)`")
        self.alg = algorithm
        self.training = True

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        args = tuple(_to_tensor(a, f"argument {i} of {method}()") for i, a in enumerate(args))
        kwargs = {k: _to_tensor(v, f"argument {k!r} of {method}()") for k, v in kwargs.items()}
        if method == "learn":
            return _to_numpy(getattr(self.alg, method)(*args, **kwargs))
        with paddle.no_grad():
            return _to_numpy(getattr(self.alg, method)(*args, **kwargs))

    # -- checkpoints -----------------------------------------------------------------------------
    def save(self, save_path: str | os.PathLike, model: Model | None = None) -> None:
        """Save a checkpoint with ``paddle.save``: PARL's model file at ``save_path`` and the full state beside it.

        ``save_path`` receives exactly what PARL 2.x writes, ``paddle.save(self.alg.model.state_dict(),
        save_path)``, so code that loads it without the agent works (``model.set_state_dict(paddle.load(
        save_path))``). ``save_path + ".state"`` (:data:`STATE_SUFFIX`) receives ``{"format":
        CHECKPOINT_FORMAT, "algorithm": class name, "state": self.alg.state_dict(), "main_sha256": SHA-256
        hex digest of the bytes at save_path, "replaces_sha256": that of the model file this save replaced (None
        if none)}``: every model, optimizer (moments keyed by parameter
        position, so another instance of the same agent can load them), scheduler and tensor of the
        algorithm, so that :meth:`restore` resumes training exactly. Parent directories are created.

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
            TypeError: ``model`` is not a paddle ``parl.Model``.
            OSError: a file cannot be written (the checkpoint at ``save_path`` is then the previous one).
        """
        if model is not None and not isinstance(model, paddle.nn.Layer):
            raise TypeError(f"save(model=...) expects a parl.Model, got {type(model).__name__}")
        self._save_checkpoint(save_path, model, _write)

    def restore(self, save_path: str | os.PathLike, model: Model | None = None) -> None:
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

        ``paddle.load`` unpickles without restriction, so each file is first unpickled allowing only plain
        containers and numpy arrays (what ``paddle.save`` writes for tensors): a file referencing anything
        else is refused and no code in it runs. A refused file leaves the agent exactly as it was.

        Raises:
            FileNotFoundError: ``save_path`` does not exist.
            ValueError: the file (or the sidecar) is empty, truncated, corrupt, not a paddle checkpoint,
                references objects other than arrays and containers, or is of another checkpoint format
                version; the file does not fit this agent's models (keys / shapes); ``model`` is given for a
                full-state file; or ``save_path + ".state"`` is not a state file written by ``save``. The
                message names the file, what is wrong and what to do.
        """
        self._restore_checkpoint(save_path, model, _read)

    def save_inference_model(self, save_path: str | os.PathLike, input_shape_list: Sequence[Sequence[int | None]],
                             input_dtype_list: Sequence[str], model: Model | None = None) -> None:
        """Export a model's ``forward`` as a static inference program with ``paddle.jit.save`` (PARL's API).

        The files ``save_path + ".pdmodel"`` / ``".pdiparams"`` (``.json`` on paddle >= 3 with PIR) load
        with ``paddle.jit.load(save_path)`` and with EvoKit's ``load_inference_model``.

        Args:
            save_path: path prefix of the files to write; parent directories are created.
            input_shape_list: one shape per ``forward`` input, e.g. ``[[None, 4]]`` (``None`` / -1: any size).
            input_dtype_list: one dtype per input, e.g. ``["float32"]``.
            model: the model to export; ``self.alg.model`` by default.

        Raises:
            ValueError: the model does not override ``forward``, or the two lists differ in length.
        """
        model = self.alg.model if model is None else model
        if not isinstance(model, paddle.nn.Layer) or type(model).forward is paddle.nn.Layer.forward:
            raise ValueError(f"save_inference_model exports model.forward; define `def forward(self, obs)` in "
                             f"{type(model).__name__} (or pass model= a parl.Model that defines it)")
        if len(input_shape_list) != len(input_dtype_list):
            raise ValueError(f"save_inference_model: {len(input_shape_list)} input shapes but "
                             f"{len(input_dtype_list)} dtypes; give one dtype per input, e.g. ['float32']")
        specs = [paddle.static.InputSpec(shape=list(shape), dtype=dtype, name=f"input_{i}")
                 for i, (shape, dtype) in enumerate(zip(input_shape_list, input_dtype_list, strict=True))]
        save_path = os.fspath(save_path)
        if os.path.dirname(save_path):
            os.makedirs(os.path.dirname(save_path), exist_ok=True)
        was_training = model.training
        model.eval()
        try:
            paddle.jit.save(paddle.jit.to_static(model, input_spec=specs, full_graph=True), save_path)
        finally:
            if was_training:
                model.train()
