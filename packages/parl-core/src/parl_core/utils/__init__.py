"""PARL utilities: returns / GAE, model checks, logging, tensorboard summary, replay memory, schedulers,
crash-safe file writes (``atomic_write``, ``atomic_write_many``: see :mod:`parl_core.utils.atomic`), a training
run's harness (``RunLog``: curve.csv, tensorboard, summary.json; ``Checkpointer``: periodic and on-signal
checkpoints, exact resume: see :mod:`parl_core.utils.run`).

``summary`` is a submodule (``from parl_core.utils import summary``); it, like everything here, imports
no deep-learning framework until used.
"""

from parl_core.utils import atomic, logger, run, summary
from parl_core.utils.atomic import atomic_write, atomic_write_many
from parl_core.utils.machine_info import (
    get_free_tcp_port,
    get_gpu_count,
    get_ip_address,
    get_port_from_range,
    is_gpu_available,
    is_port_available,
    is_xpu_available,
)
from parl_core.utils.model_check import check_model_method
from parl_core.utils.np_utils import np_cross_entropy, np_softmax
from parl_core.utils.replay_memory import ReplayMemory
from parl_core.utils.returns import calc_discount_sum_rewards, calc_gae, compute_gae, discounted_returns
from parl_core.utils.run import Checkpointer, CheckpointError, RunLog, add_run_args
from parl_core.utils.scheduler import LinearDecayScheduler, PiecewiseScheduler
from parl_core.utils.stats import CSVLogger, TimeStat, WindowStat

__all__ = [
    "CSVLogger",
    "CheckpointError",
    "Checkpointer",
    "RunLog",
    "add_run_args",
    "LinearDecayScheduler",
    "PiecewiseScheduler",
    "ReplayMemory",
    "TimeStat",
    "WindowStat",
    "atomic",
    "atomic_write",
    "atomic_write_many",
    "calc_discount_sum_rewards",
    "calc_gae",
    "check_model_method",
    "compute_gae",
    "discounted_returns",
    "get_free_tcp_port",
    "get_gpu_count",
    "get_ip_address",
    "get_port_from_range",
    "is_gpu_available",
    "is_port_available",
    "is_xpu_available",
    "np_cross_entropy",
    "np_softmax",
    "logger",
    "run",
    "summary",
]
