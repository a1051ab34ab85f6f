"""Parameter back ends: what the agent perturbs and runs, for numpy, torch and paddle models.

The agent only needs a flat float32 view of the model's trainable parameters and a forward pass, so each back
end is a small adapter with ``get_flat() / set_flat(vec) / predict(x) / copy() / save(dir) / load(path)``:

- :class:`NumpyBackend` wraps a numpy model: any object with ``get_weights() -> dict[str, ndarray]``,
  ``set_weights(dict)`` and ``forward(x)`` (PARL's ``Model`` names), e.g. :class:`NumpyMLP`. Files: ``model.npz``.
- :class:`TorchBackend` wraps a ``torch.nn.Module`` (its ``parameters()``; buffers are not perturbed).
  Files: ``model.pt`` (``state_dict``).
- :class:`PaddleBackend` wraps a ``paddle.nn.Layer``. Files: ``model.pdparams``.

torch and paddle are imported only when a model of theirs is given.

Saves are crash-safe: each file is written under a temporary name in its folder, fsynced and renamed into place
(:mod:`evokit._atomic`), so a process killed during a save leaves the previous file or the new one, whole.
Loads refuse a bad file (empty, truncated, corrupt, another architecture, objects other than arrays) with a
:class:`~evokit.errors.ModelFileError` naming the file, the problem and the fix, leaving the model as it was;
no file is unpickled beyond arrays and plain containers (numpy ``allow_pickle=False``, torch ``weights_only``,
and a checking unpickler before ``paddle.load``).
"""

from __future__ import annotations

import copy
import io
import json
import os
import pickle
import re
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from evokit._atomic import atomic_write
from evokit.errors import ModelFileError

__all__ = ["NumpyMLP", "NumpyBackend", "TorchBackend", "PaddleBackend", "make_backend", "load_backend_from_file",
           "load_paddle_inference_model", "paddle_inference_prefix"]

_ACTIVATIONS = {
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
    "identity": lambda x: x,
}
_MLP_META_KEY = "__evokit_mlp__"
_FIX = "load an earlier copy, or save the model again"


def _describe(path: str, kind: str) -> str:
    """What is wrong with a file a loader failed on, in words (never the loader's own text)."""
    with open(path, "rb") as file:
        head = file.read(8)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"\x80") or head.startswith(b"\x93NUMPY"):
        return "it is truncated or corrupt (it starts like a model file but does not read to its end)"
    return f"it is not a {kind} file (its first bytes are {head!r})"


def read_model_file(path: str, kind: str, read: Callable[[str], Any], fix: str = _FIX) -> Any:
    """``read(path)``, every failure turned into a :class:`ModelFileError` naming ``path``, the problem and ``fix``.

    Raises:
        ModelFileError: the file is empty, or ``read`` fails (``kind`` names the expected format).
    """
    if os.path.getsize(path) == 0:
        raise ModelFileError(f"cannot load {path!r}: the file is empty (0 bytes; a copy or save that stopped before "
                             f"writing, or a full disk); {fix}")
    try:
        return read(path)
    except ModelFileError:
        raise
    except Exception:  # described in our words: framework messages may advise an unsafe load
        reason = _describe(path, kind)
    raise ModelFileError(f"cannot load {path!r}: {reason}; {fix}")


def _refuse_global(path: str, name: str) -> ModelFileError:
    return ModelFileError(f"cannot load {path!r}: it references {name}, which a file of arrays and plain containers "
                          f"never does; it is not unpickled, as that could run code the file chooses; {_FIX}")


def _check_fits(path: str, own: dict[str, Any], loaded: Any, owner: str) -> None:
    """Refuse ``loaded`` unless it has exactly the names and shapes of the ``state_dict`` ``own``."""
    if not isinstance(loaded, dict):
        raise ModelFileError(f"cannot load {path!r}: it holds a {type(loaded).__name__}, not a state_dict; {_FIX}")
    missing = [k for k in own if k not in loaded]
    unexpected = [k for k in loaded if k not in own]
    mismatched = [f"{k}: model {tuple(own[k].shape)} vs file {tuple(np.shape(loaded[k]))}" for k in own
                  if k in loaded and tuple(own[k].shape) != tuple(np.shape(loaded[k]))]
    if missing or unexpected or mismatched:
        found = "; ".join(part for part in (f"missing {missing}" if missing else "",
                                            f"unexpected {unexpected}" if unexpected else "",
                                            f"shape mismatches {mismatched}" if mismatched else "") if part)
        raise ModelFileError(f"cannot load {path!r}: it does not fit {owner} ({found}); load a file saved from a "
                             "model of the same architecture")


# what paddle.save writes for a state dict (tensors become numpy arrays) and plain containers
_PADDLE_SAFE_GLOBALS = frozenset({
    ("collections", "OrderedDict"),
    ("builtins", "tuple"), ("builtins", "list"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "complex"), ("_codecs", "encode"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
})


class _CheckingUnpickler(pickle.Unpickler):
    def __init__(self, file: BinaryIO, path: str) -> None:
        super().__init__(file, encoding="latin1")
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PADDLE_SAFE_GLOBALS:
            return super().find_class(module, name)
        raise _refuse_global(self.path, f"{module}.{name}")


class NumpyMLP:
    """A multilayer perceptron in numpy, with PARL's ``Model`` weight API.

    Weights are ``w{i}: float32 [in_i, out_i]`` and ``b{i}: float32 [out_i]``, initialised with
    Glorot-uniform weights and zero biases from ``seed``.

    Args:
        layer_sizes: ``[obs_dim, hidden..., out_dim]`` (at least two entries).
        activation: hidden activation, ``"tanh"`` (default), ``"relu"`` or ``"identity"``.
        output_activation: output activation, default ``"identity"``.
        seed: initialisation seed.

    Raises:
        ValueError: fewer than two sizes, a size < 1, or an unknown activation.
    """

    def __init__(self, layer_sizes: list[int] | tuple[int, ...], *, activation: str = "tanh",
                 output_activation: str = "identity", seed: int = 0) -> None:
        sizes = [int(s) for s in layer_sizes]
        if len(sizes) < 2 or min(sizes) < 1:
            raise ValueError(f"layer_sizes needs >= 2 positive sizes, got {layer_sizes}")
        for name in (activation, output_activation):
            if name not in _ACTIVATIONS:
                raise ValueError(f"unknown activation {name!r}; use one of {sorted(_ACTIVATIONS)}")
        self.layer_sizes = sizes
        self.activation = activation
        self.output_activation = output_activation
        rng = np.random.default_rng(seed)
        self.weights: dict[str, np.ndarray] = {}
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=False)):
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            self.weights[f"w{i}"] = rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)
            self.weights[f"b{i}"] = np.zeros(fan_out, dtype=np.float32)

    @property
    def num_params(self) -> int:
        """Total number of parameters."""
        return sum(w.size for w in self.weights.values())

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return copies of the weights, ``{name: float32 array}`` in layer order."""
        return {k: v.copy() for k, v in self.weights.items()}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Set the weights from ``{name: array}`` with the same names and shapes.

        Raises:
            KeyError: a name is missing. ValueError: a shape differs.
        """
        for k, v in self.weights.items():
            new = np.asarray(weights[k], dtype=np.float32)
            if new.shape != v.shape:
                raise ValueError(f"weight {k!r} has shape {new.shape}, expected {v.shape}")
            self.weights[k] = new.copy()

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Run the network.

        Args:
            x: float32 [B, obs_dim] or [obs_dim].

        Returns:
            float32 [B, out_dim] (or [out_dim] for a 1-D input).
        """
        h = np.asarray(x, dtype=np.float32)
        n_layers = len(self.layer_sizes) - 1
        for i in range(n_layers):
            h = h @ self.weights[f"w{i}"] + self.weights[f"b{i}"]
            h = _ACTIVATIONS[self.activation if i < n_layers - 1 else self.output_activation](h)
        return h

    __call__ = forward

    def forward_population(self, flat_params: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Run P parameter vectors at once, each on its own inputs (batched evaluation of a population).

        Args:
            flat_params: float32 [P, num_params], each row laid out as ``NumpyBackend.get_flat`` (w0, b0, w1, ...).
            x: float32 [P, obs_dim] or [P, B, obs_dim] the inputs of each member.

        Returns:
            float32 [P, out_dim] or [P, B, out_dim].
        """
        flat_params = np.asarray(flat_params, dtype=np.float32)
        h = np.asarray(x, dtype=np.float32)
        squeeze = h.ndim == 2
        if squeeze:
            h = h[:, None, :]
        pop = flat_params.shape[0]
        pos = 0
        n_layers = len(self.layer_sizes) - 1
        for i, (fan_in, fan_out) in enumerate(zip(self.layer_sizes[:-1], self.layer_sizes[1:], strict=False)):
            w = flat_params[:, pos:pos + fan_in * fan_out].reshape(pop, fan_in, fan_out)
            pos += fan_in * fan_out
            b = flat_params[:, pos:pos + fan_out]
            pos += fan_out
            h = np.matmul(h, w) + b[:, None, :]
            h = _ACTIVATIONS[self.activation if i < n_layers - 1 else self.output_activation](h)
        return h[:, 0, :] if squeeze else h

    def meta(self) -> dict[str, Any]:
        """The architecture, stored in saved ``.npz`` files so a model can be rebuilt without code."""
        return {"layer_sizes": self.layer_sizes, "activation": self.activation,
                "output_activation": self.output_activation}


class NumpyBackend:
    """Adapter for numpy models with ``get_weights`` / ``set_weights`` / ``forward``.

    Args:
        model: the model (e.g. :class:`NumpyMLP`).

    Raises:
        TypeError: the model lacks one of the three methods.
    """

    kind = "numpy"
    filename = "model.npz"

    def __init__(self, model: Any) -> None:
        for name in ("get_weights", "set_weights", "forward"):
            if not callable(getattr(model, name, None)):
                raise TypeError(f"a numpy model needs a {name}() method (PARL's Model API); "
                                f"{type(model).__name__} has none")
        self.model = model
        weights = model.get_weights()
        self._names = list(weights)
        self._shapes = [np.shape(weights[k]) for k in self._names]
        self._sizes = [int(np.prod(s)) for s in self._shapes]

    @property
    def num_params(self) -> int:
        """Number of parameters evolved (the length of the flat vector)."""
        return sum(self._sizes)

    def get_flat(self) -> np.ndarray:
        """float32 [num_params]: the weights concatenated in ``get_weights`` order."""
        weights = self.model.get_weights()
        return np.concatenate([np.asarray(weights[k], dtype=np.float32).ravel() for k in self._names])

    def set_flat(self, flat: np.ndarray) -> None:
        """Set the weights from a float32 [num_params] vector."""
        out, pos = {}, 0
        for name, shape, size in zip(self._names, self._shapes, self._sizes, strict=True):
            out[name] = flat[pos:pos + size].reshape(shape)
            pos += size
        self.model.set_weights(out)

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Run the model: ``features`` float32 [B, in_dim] -> numpy [B, out_dim]."""
        return np.asarray(self.model.forward(features))

    def copy(self) -> NumpyBackend:
        """A back end over a deep copy of the model (for a sampling clone)."""
        return NumpyBackend(copy.deepcopy(self.model))

    def save(self, directory: str) -> str:
        """Write the model's parameters into ``directory``; return the file path."""
        path = os.path.join(directory, self.filename)
        arrays = dict(self.model.get_weights())
        meta = getattr(self.model, "meta", None)
        if callable(meta):
            arrays[_MLP_META_KEY] = np.asarray(json.dumps(meta()))
        with atomic_write(path) as file:  # crash-safe: the previous file or this one, whole
            np.savez(file, **arrays)
        return path

    def load(self, path: str) -> None:
        """Load parameters written by :meth:`save`; a refused file leaves the model as it was.

        Raises:
            ModelFileError: the file is empty, truncated, not an ``.npz``, or its names / shapes differ from the
                model's.
        """
        weights = read_model_file(path, "numpy .npz", read_npz)
        weights.pop(_MLP_META_KEY, None)
        before = self.model.get_weights()
        _check_fits(path, before, weights, type(self.model).__name__)
        try:
            self.model.set_weights(weights)
        except (KeyError, ValueError, TypeError) as exc:
            self.model.set_weights(before)
            raise ModelFileError(f"cannot load {path!r}: it does not fit {type(self.model).__name__} ({exc}); load a "
                                 "file saved from a model of the same architecture") from None


class TorchBackend:
    """Adapter for a ``torch.nn.Module``; the flat vector covers ``parameters()`` (float32, CPU).

    ``predict`` runs the module under ``torch.no_grad()`` on ``torch.as_tensor(features)`` and returns numpy.
    """

    kind = "torch"
    filename = "model.pt"

    def __init__(self, module: Any) -> None:
        import torch

        self.torch = torch
        self.model = module
        self._params = [p for p in module.parameters()]
        if any(p.dtype != torch.float32 for p in self._params):
            raise TypeError("TorchBackend supports float32 parameters only; call module.float() first")

    @property
    def num_params(self) -> int:
        """Number of parameters evolved (the length of the flat vector)."""
        return sum(p.numel() for p in self._params)

    def get_flat(self) -> np.ndarray:
        """float32 [num_params]: ``parameters()`` concatenated (``parameters_to_vector``)."""
        with self.torch.no_grad():
            return self.torch.nn.utils.parameters_to_vector(self._params).cpu().numpy().astype(np.float32)

    def set_flat(self, flat: np.ndarray) -> None:
        """Copy a float32 [num_params] vector into ``parameters()``."""
        with self.torch.no_grad():
            vec = self.torch.from_numpy(np.ascontiguousarray(flat, dtype=np.float32))
            self.torch.nn.utils.vector_to_parameters(vec.to(self._params[0].device), self._params)

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Run the model: ``features`` float32 [B, in_dim] -> numpy [B, out_dim]."""
        with self.torch.no_grad():
            x = self.torch.as_tensor(np.asarray(features, dtype=np.float32), device=self._params[0].device)
            return self.model(x).cpu().numpy()

    def copy(self) -> TorchBackend:
        """A back end over a deep copy of the module (for a sampling clone)."""
        return TorchBackend(copy.deepcopy(self.model))

    def save(self, directory: str) -> str:
        """Write the model's parameters into ``directory``; return the file path."""
        path = os.path.join(directory, self.filename)
        with atomic_write(path) as file:  # crash-safe: the previous file or this one, whole
            self.torch.save(self.model.state_dict(), file)
        return path

    def load(self, path: str) -> None:
        """Load parameters written by :meth:`save` (``torch.load(weights_only=True)``: nothing in the file runs);
        a refused file leaves the model as it was.

        Raises:
            ModelFileError: the file is empty, truncated, not a torch file, references objects other than
                tensors, or its names / shapes differ from the module's.
        """
        def read(p: str) -> Any:
            try:
                return self.torch.load(p, map_location="cpu", weights_only=True)
            except pickle.UnpicklingError as exc:
                found = re.search(r"unsupported global:?\s+(?:GLOBAL\s+)?([\w.]+)", str(exc), re.IGNORECASE)
                if found is None:
                    raise
                raise _refuse_global(p, found.group(1)) from None

        state = read_model_file(path, "torch", read)
        _check_fits(path, self.model.state_dict(), state, type(self.model).__name__)
        self.model.load_state_dict(state)


class PaddleBackend:
    """Adapter for a ``paddle.nn.Layer``; the flat vector covers ``parameters()`` (float32).

    Args:
        layer: the layer.
        reload: for a layer that cannot be deep-copied (``paddle.jit.load``'s), a function that builds a new one.
    """

    kind = "paddle"
    filename = "model.pdparams"

    def __init__(self, layer: Any, reload: Any = None) -> None:
        import paddle

        self.paddle = paddle
        self.model = layer
        self._reload = reload
        self._params = list(layer.parameters())

    @property
    def num_params(self) -> int:
        """Number of parameters evolved (the length of the flat vector)."""
        return sum(int(np.prod(p.shape)) for p in self._params)

    def get_flat(self) -> np.ndarray:
        """float32 [num_params]: ``parameters()`` concatenated."""
        return np.concatenate([p.numpy().astype(np.float32).ravel() for p in self._params])

    def set_flat(self, flat: np.ndarray) -> None:
        """Copy a float32 [num_params] vector into ``parameters()``."""
        pos = 0
        for p in self._params:
            size = int(np.prod(p.shape))
            p.set_value(np.asarray(flat[pos:pos + size], dtype=np.float32).reshape(p.shape))
            pos += size

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Run the model: ``features`` float32 [B, in_dim] -> numpy [B, out_dim]."""
        with self.paddle.no_grad():
            return self.model(self.paddle.to_tensor(np.asarray(features, dtype=np.float32))).numpy()

    def copy(self) -> PaddleBackend:
        """A back end over a deep copy of the layer (for a sampling clone); a layer loaded by ``paddle.jit.load``
        (which cannot be deep-copied) is loaded again and given the current parameters."""
        if self._reload is None:
            return PaddleBackend(copy.deepcopy(self.model))
        other = PaddleBackend(self._reload(), self._reload)
        other.set_flat(self.get_flat())
        return other

    def save(self, directory: str) -> str:
        """Write the model's parameters into ``directory``; return the file path."""
        path = os.path.join(directory, self.filename)
        buffer = io.BytesIO()  # paddle.save takes a path or a BytesIO, not an open file
        self.paddle.save(self.model.state_dict(), buffer)
        with atomic_write(path) as file:  # crash-safe: the previous file or this one, whole
            file.write(buffer.getvalue())
        return path

    def load(self, path: str) -> None:
        """Load parameters written by :meth:`save`; a refused file leaves the layer as it was.

        ``paddle.load`` unpickles without restriction, so the bytes are first unpickled allowing only plain
        containers and numpy arrays (what ``paddle.save`` writes for tensors); anything else is refused unrun.

        Raises:
            ModelFileError: the file is empty, truncated, not a paddle file, references other objects, or its
                names / shapes differ from the layer's (``set_state_dict`` would skip those silently).
        """
        def read(p: str) -> Any:
            with open(p, "rb") as file:
                data = file.read()
            _CheckingUnpickler(io.BytesIO(data), p).load()
            return self.paddle.load(io.BytesIO(data))

        state = read_model_file(path, "paddle", read)
        _check_fits(path, self.model.state_dict(), state, type(self.model).__name__)
        self.model.set_state_dict(state)


def make_backend(model: Any) -> NumpyBackend | TorchBackend | PaddleBackend:
    """Pick the back end of ``model``: a torch Module, a paddle Layer, or a numpy model.

    Raises:
        TypeError: the model is none of these.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(model, torch.nn.Module):
        return TorchBackend(model)
    paddle = sys.modules.get("paddle")
    if paddle is not None and isinstance(model, paddle.nn.Layer):
        return PaddleBackend(model)
    return NumpyBackend(model)


def resolve_model_file(path: str, backend: Any | None) -> str:
    """Return the model file for ``path`` (a file, or a directory holding ``model.npz|pt|pdparams``).

    Raises:
        FileNotFoundError: nothing matching exists.
    """
    if os.path.isfile(path):
        return path
    if os.path.isdir(path):
        names = [backend.filename] if backend is not None else [b.filename for b in
                                                               (NumpyBackend, TorchBackend, PaddleBackend)]
        for name in names:
            candidate = os.path.join(path, name)
            if os.path.isfile(candidate):
                return candidate
        raise FileNotFoundError(f"no model file ({', '.join(names)}) in directory {path!r}; "
                                "write one with save_inference_model(dir)")
    raise FileNotFoundError(f"inference model not found: {path!r}")


def paddle_inference_prefix(path: str) -> str | None:
    """The path prefix of a paddle inference model (``paddle.jit.save`` / ``paddle.static.save_inference_model``:
    ``<prefix>.pdiparams`` beside ``<prefix>.json`` or ``<prefix>.pdmodel``) in directory ``path``, else None."""
    if not os.path.isdir(path):
        return None
    prefixes = sorted(name[:-len(".pdiparams")] for name in os.listdir(path) if name.endswith(".pdiparams"))
    if not prefixes:
        return None
    if len(prefixes) > 1:
        raise ValueError(f"{path!r} holds several paddle inference models ({', '.join(prefixes)}); pass the "
                         "directory of one")
    return os.path.join(path, prefixes[0])


def load_paddle_inference_model(prefix: str) -> PaddleBackend:
    """A :class:`PaddleBackend` over the layer ``paddle.jit.load(prefix)`` rebuilds (its parameters are evolved).

    Raises:
        ImportError: paddle is not installed (``pip install "parl-evokit[paddle]"``).
    """
    try:
        import paddle
    except ImportError as exc:
        raise ImportError(f"{prefix!r} is a paddle inference model; install paddle to load it "
                          "(pip install 'parl-evokit[paddle]')") from exc
    return PaddleBackend(paddle.jit.load(prefix), reload=lambda: paddle.jit.load(prefix))


def load_backend_from_file(path: str) -> NumpyBackend:
    """Rebuild a :class:`NumpyMLP` from an ``.npz`` saved by ``save_inference_model`` (it stores the architecture).

    Raises:
        ValueError: the file has no architecture record (pass ``model=`` to ``ESAgent`` instead).
        ModelFileError: the file is empty, truncated, not an ``.npz``, or its record or weights do not fit.
    """
    if not path.endswith(".npz"):
        raise ValueError(f"cannot rebuild a model from {path!r} without its code; pass model= (a torch Module, a "
                         "paddle Layer or a numpy model) to ESAgent")
    arrays = read_model_file(path, "numpy .npz", read_npz)
    if _MLP_META_KEY not in arrays:
        raise ValueError(f"{path!r} holds weights only, no NumpyMLP architecture; pass model= to ESAgent")
    try:
        meta = json.loads(str(arrays[_MLP_META_KEY]))
        sizes, activation, output = meta["layer_sizes"], meta["activation"], meta["output_activation"]
    except (ValueError, KeyError, TypeError):
        raise ModelFileError(f"cannot load {path!r}: its NumpyMLP architecture record is not readable; {_FIX}, "
                             "or pass model= to ESAgent") from None
    backend = NumpyBackend(NumpyMLP(sizes, activation=activation, output_activation=output))
    backend.load(path)
    return backend


def read_npz(path: str) -> dict[str, np.ndarray]:
    data = np.load(path, allow_pickle=False)
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ModelFileError(f"cannot load {path!r}: it holds a single numpy array (.npy), not the .npz archive "
                             f"evokit saves; {_FIX}")
    with data:
        return {k: data[k] for k in data.files}
