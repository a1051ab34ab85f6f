"""EvoKit: evolution strategies for online products (online sampling, offline update).

Python rebuild of PARL's EvoKit: :class:`ESAgent` (``load_config``, ``load_inference_model``, ``init_solver``,
``clone``, ``add_noise``, ``predict``, ``update``, ``save_solver`` / ``load_solver``, ``save_inference_model``),
the compact :class:`SamplingInfo` and its binary sampling log, BASIC_ES / CMA_ES / GA solvers, SGD / MOMENTUM /
ADAM optimizers, seeded or shared-table Gaussian noise, numpy / torch / paddle models, and the running mean / std
observation filter merged across samplers (:class:`MeanStdFilter`).
"""

from evokit.agent import ESAgent
from evokit.config import load_config, parse_prototxt, parse_toml
from evokit.errors import (
    ConfigError,
    EvoKitError,
    FilterStateError,
    ModelFileError,
    SamplingLogError,
    SolverStateError,
    StaleSampleError,
    TruncatedLogError,
)
from evokit.models import NumpyMLP
from evokit.noise import NoiseTable
from evokit.obs_filter import MeanStdFilter, RunningStat
from evokit.sampling_info import SamplingInfo, SamplingLogWriter, read_sampling_log, write_sampling_log
from evokit.solvers import centered_ranks

__version__ = "3.0.0"

__all__ = [
    "ESAgent",
    "SamplingInfo",
    "SamplingLogWriter",
    "read_sampling_log",
    "write_sampling_log",
    "NumpyMLP",
    "NoiseTable",
    "MeanStdFilter",
    "RunningStat",
    "centered_ranks",
    "load_config",
    "parse_prototxt",
    "parse_toml",
    "EvoKitError",
    "ConfigError",
    "SamplingLogError",
    "TruncatedLogError",
    "SolverStateError",
    "StaleSampleError",
    "FilterStateError",
    "ModelFileError",
]
