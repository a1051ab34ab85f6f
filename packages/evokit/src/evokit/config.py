"""The EvoKit config: protobuf text format (the tutorial's ``config.prototxt``) or an equivalent TOML file.

The message types are built at run time from ``descriptor_pb2`` (no ``protoc`` and no generated code),
in a private descriptor pool, then files are parsed with protobuf's own ``text_format`` parser (prototxt)
or ``json_format.ParseDict`` (TOML, after ``tomllib``), so both forms are validated by the same schema:
an unknown field or enum name is an error naming the field.

The schema (proto2), a superset of the EvoKit tutorial's example config::

    message EvoKitConfig {
      optional SolverConfig solver = 1;
      optional AsyncESConfig async_es = 2;
    }
    message SolverConfig {
      optional SolverType type = 1 [default = BASIC_ES];       // BASIC_ES | CMA_ES | GA
      optional OptimizerConfig optimizer = 2;                   // BASIC_ES only
      optional SamplingConfig sampling = 3;
      optional bool mirrored_sampling = 4 [default = true];     // antithetic pairs +eps / -eps
      optional FitnessShaping fitness_shaping = 5 [default = RANK_CENTERED];  // RANK_CENTERED | RAW
      optional double l2_coeff = 6 [default = 0];               // weight decay of BASIC_ES
      optional GAConfig ga = 7;
    }
    message OptimizerConfig {
      optional OptimizerType type = 1 [default = SGD];          // SGD | MOMENTUM | ADAM
      optional double base_lr = 2 [default = 0.001];
      optional MomentumConfig momentum = 3;                     // { momentum = 0.9 }
      optional AdamConfig adam = 4;                             // { beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 }
    }
    message SamplingConfig {
      optional SamplingType type = 1 [default = GAUSSIAN_SAMPLING];
      optional GaussianSamplingConfig gaussian_sampling = 2;
    }
    message GaussianSamplingConfig {
      optional double std = 1 [default = 1.0];
      optional bool cached = 2 [default = false];
      optional int64 seed = 3 [default = 18];
      optional int64 cache_size = 4 [default = 100000];         // float32 entries of the noise table
    }
    message GAConfig { optional int32 elite_size = 1 [default = 5]; }
    message AsyncESConfig {
      optional string model_warehouse = 1 [default = "./model_warehouse"];
      optional int32 max_to_keep = 2 [default = 5];             // model iterations kept for stale samples
    }

Field numbers and defaults of ``GaussianSamplingConfig``, ``AdamConfig`` and ``AsyncESConfig`` follow the
original ``evo_kit.proto``. The TOML form nests tables the same way (``[solver.optimizer.adam]``) and
names enums by their string (``type = "ADAM"``).
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, text_format

from evokit.errors import ConfigError

__all__ = ["load_config", "parse_prototxt", "parse_toml", "config_to_prototxt"]

_PACKAGE = "evokit"
_F = descriptor_pb2.FieldDescriptorProto

_ENUMS = {
    "SolverType": ["BASIC_ES", "CMA_ES", "GA"],
    "OptimizerType": ["SGD", "MOMENTUM", "ADAM"],
    "SamplingType": ["GAUSSIAN_SAMPLING"],
    "FitnessShaping": ["RANK_CENTERED", "RAW"],
}

# message name -> [(field name, number, type, type name or None, default text or None, repeated)]
_MESSAGES: dict[str, list[tuple[str, int, int, str | None, str | None, bool]]] = {
    "EvoKitConfig": [
        ("solver", 1, _F.TYPE_MESSAGE, "SolverConfig", None, False),
        ("async_es", 2, _F.TYPE_MESSAGE, "AsyncESConfig", None, False),
    ],
    "SolverConfig": [
        ("type", 1, _F.TYPE_ENUM, "SolverType", "BASIC_ES", False),
        ("optimizer", 2, _F.TYPE_MESSAGE, "OptimizerConfig", None, False),
        ("sampling", 3, _F.TYPE_MESSAGE, "SamplingConfig", None, False),
        ("mirrored_sampling", 4, _F.TYPE_BOOL, None, "true", False),
        ("fitness_shaping", 5, _F.TYPE_ENUM, "FitnessShaping", "RANK_CENTERED", False),
        ("l2_coeff", 6, _F.TYPE_DOUBLE, None, "0", False),
        ("ga", 7, _F.TYPE_MESSAGE, "GAConfig", None, False),
    ],
    "OptimizerConfig": [
        ("type", 1, _F.TYPE_ENUM, "OptimizerType", "SGD", False),
        ("base_lr", 2, _F.TYPE_DOUBLE, None, "0.001", False),
        ("momentum", 3, _F.TYPE_MESSAGE, "MomentumConfig", None, False),
        ("adam", 4, _F.TYPE_MESSAGE, "AdamConfig", None, False),
    ],
    "MomentumConfig": [("momentum", 1, _F.TYPE_DOUBLE, None, "0.9", False)],
    "AdamConfig": [
        ("beta1", 1, _F.TYPE_DOUBLE, None, "0.9", False),
        ("beta2", 2, _F.TYPE_DOUBLE, None, "0.999", False),
        ("epsilon", 3, _F.TYPE_DOUBLE, None, "1e-08", False),
    ],
    "SamplingConfig": [
        ("type", 1, _F.TYPE_ENUM, "SamplingType", "GAUSSIAN_SAMPLING", False),
        ("gaussian_sampling", 2, _F.TYPE_MESSAGE, "GaussianSamplingConfig", None, False),
    ],
    "GaussianSamplingConfig": [
        ("std", 1, _F.TYPE_DOUBLE, None, "1.0", False),
        ("cached", 2, _F.TYPE_BOOL, None, "false", False),
        ("seed", 3, _F.TYPE_INT64, None, "18", False),
        ("cache_size", 4, _F.TYPE_INT64, None, "100000", False),
    ],
    "GAConfig": [("elite_size", 1, _F.TYPE_INT32, None, "5", False)],
    "AsyncESConfig": [
        ("model_warehouse", 1, _F.TYPE_STRING, None, "./model_warehouse", False),
        ("max_to_keep", 2, _F.TYPE_INT32, None, "5", False),
    ],
    # The original EvoKit's SamplingInfo (field 1 and 2, wire compatible) plus field 3, the mirrored sign.
    "SamplingInfo": [
        ("key", 1, _F.TYPE_INT64, None, None, True),
        ("model_iter_id", 2, _F.TYPE_INT32, None, "0", False),
        ("negative", 3, _F.TYPE_BOOL, None, "false", False),
    ],
}


@functools.lru_cache(maxsize=1)
def _message_classes() -> dict[str, type]:
    fdp = descriptor_pb2.FileDescriptorProto(name="evokit/evokit.proto", package=_PACKAGE, syntax="proto2")
    for enum_name, values in _ENUMS.items():
        enum = fdp.enum_type.add(name=enum_name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for msg_name, fields in _MESSAGES.items():
        msg = fdp.message_type.add(name=msg_name)
        for name, number, ftype, type_name, default, repeated in fields:
            field = msg.field.add(name=name, number=number, type=ftype)
            field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if type_name is not None:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if default is not None:
                field.default_value = default
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    if get_class is None:  # pragma: no cover - older protobuf
        get_class = message_factory.MessageFactory(pool).GetPrototype
    return {name: get_class(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}")) for name in _MESSAGES}


def __getattr__(name: str) -> Any:
    # The message classes are built lazily on first use (no work at import time).
    if name == "EvoKitConfig":
        return _message_classes()["EvoKitConfig"]
    if name == "SamplingInfoProto":
        return _message_classes()["SamplingInfo"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def new_config() -> Any:
    """Return an empty ``EvoKitConfig`` message (every field at its default)."""
    return _message_classes()["EvoKitConfig"]()


def parse_prototxt(text: str) -> Any:
    """Parse a config in protobuf text format (the EvoKit tutorial's ``config.prototxt``).

    Args:
        text: the file's contents; ``#`` comments and the tutorial's ``//`` comments (to the end of the line,
            outside quoted strings) are allowed.

    Returns:
        An ``EvoKitConfig`` message.

    Raises:
        ConfigError: a syntax error, an unknown field or enum value (the parser's message names the line).
    """
    msg = new_config()
    try:
        text_format.Parse(strip_slash_comments(text), msg)
    except text_format.ParseError as exc:
        raise ConfigError(f"invalid EvoKit prototxt config: {exc}") from exc
    return msg


def strip_slash_comments(text: str) -> str:
    """Remove ``// ...`` comments (C++ style, as in the EvoKit tutorial's config) outside quoted strings; line
    numbers are kept, so the parser's error messages still point at the right line."""
    out = []
    for line in text.split("\n"):
        quote, i = None, 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#":
                break
            elif line.startswith("//", i):
                line = line[:i]
                break
            i += 1
        out.append(line)
    return "\n".join(out)


def parse_toml(text: str) -> Any:
    """Parse a config in TOML, with the same nesting and names as the prototxt form.

    Args:
        text: TOML text, e.g. ``[solver]\\ntype = "BASIC_ES"\\n[solver.optimizer]\\ntype = "ADAM"``.

    Returns:
        An ``EvoKitConfig`` message.

    Raises:
        ConfigError: invalid TOML, an unknown field or enum value.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid EvoKit TOML config: {exc}") from exc
    msg = new_config()
    try:
        json_format.ParseDict(data, msg)
    except json_format.ParseError as exc:
        raise ConfigError(f"invalid EvoKit TOML config: {exc}") from exc
    return msg


def load_config(path: str | os.PathLike) -> Any:
    """Read a config file: ``.toml`` as TOML, anything else (``.prototxt``, ``.pbtxt``, ``.txt``) as protobuf text.

    Args:
        path: the config file.

    Returns:
        A validated ``EvoKitConfig`` message (see :func:`validate_config`).

    Raises:
        FileNotFoundError: the file does not exist.
        ConfigError: the file does not parse or names an unsupported setting.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"EvoKit config file not found: {path!r}; pass the path of a .prototxt or .toml file")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    msg = parse_toml(text) if path.endswith(".toml") else parse_prototxt(text)
    validate_config(msg)
    return msg


def validate_config(msg: Any) -> None:
    """Check the values a schema cannot check.

    Raises:
        ConfigError: a non-positive ``std``, ``base_lr`` or ``cache_size``, a ``seed`` outside [0, 2**63),
            betas outside [0, 1), a momentum outside [0, 1), ``elite_size`` < 1 or ``max_to_keep`` < 1.
    """
    solver = msg.solver
    gs = solver.sampling.gaussian_sampling
    checks = [
        (gs.std > 0, f"solver.sampling.gaussian_sampling.std must be > 0, got {gs.std}"),
        (gs.cache_size > 0, f"solver.sampling.gaussian_sampling.cache_size must be > 0, got {gs.cache_size}"),
        (gs.seed >= 0, f"solver.sampling.gaussian_sampling.seed must be >= 0, got {gs.seed}"),
        (solver.optimizer.base_lr > 0, f"solver.optimizer.base_lr must be > 0, got {solver.optimizer.base_lr}"),
        (0 <= solver.optimizer.momentum.momentum < 1,
         f"solver.optimizer.momentum.momentum must be in [0, 1), got {solver.optimizer.momentum.momentum}"),
        (0 <= solver.optimizer.adam.beta1 < 1, f"solver.optimizer.adam.beta1 must be in [0, 1), got "
                                               f"{solver.optimizer.adam.beta1}"),
        (0 <= solver.optimizer.adam.beta2 < 1, f"solver.optimizer.adam.beta2 must be in [0, 1), got "
                                               f"{solver.optimizer.adam.beta2}"),
        (solver.optimizer.adam.epsilon > 0, "solver.optimizer.adam.epsilon must be > 0"),
        (solver.l2_coeff >= 0, f"solver.l2_coeff must be >= 0, got {solver.l2_coeff}"),
        (solver.ga.elite_size >= 1, f"solver.ga.elite_size must be >= 1, got {solver.ga.elite_size}"),
        (msg.async_es.max_to_keep >= 1, f"async_es.max_to_keep must be >= 1, got {msg.async_es.max_to_keep}"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)


def config_to_prototxt(msg: Any) -> str:
    """Return ``msg`` in protobuf text format (only the fields that were set)."""
    return text_format.MessageToString(msg)


def enum_name(msg: Any, field: str) -> str:
    """Return the enum value name of ``msg.<field>`` (e.g. ``"ADAM"``)."""
    fd = msg.DESCRIPTOR.fields_by_name[field]
    return fd.enum_type.values_by_number[getattr(msg, field)].name
