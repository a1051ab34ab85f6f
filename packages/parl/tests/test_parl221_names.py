"""Every public name of PARL 2.2.1's ``parl``, ``parl.env``, ``parl.utils``, ``parl.algorithms``, ``parl.remote``
(and their public modules) is importable from this project, or listed below as deliberately absent with the
reason.

``PARL_221_NAMES`` is data extracted statically (``ast``) from PARL 2.2.1's source (github PaddlePaddle/PARL,
``parl/``, version 2.2.1) and committed here, so the test needs no PARL download. A module's names are what
``from M import *`` gives in PARL: its ``__all__`` (with the names its ``for`` loops append to ``__all__``, as
``parl.utils.logger`` does), else its top-level classes, functions and assignments not starting with ``_``,
plus the names of the ``parl.*`` modules it star-imports (every backend branch but fluid). ``parl``'s own entry
is the star-import of ``parl.core.torch`` / ``parl.core.paddle`` plus what its ``__init__`` binds for users.
PARL's ``tests`` and ``test_utils`` modules, its fluid backend and its remote runtime's internal modules are out
of scope (``parl.remote``, ``.client``, ``.exceptions`` and ``.remote_decorator``, which user code imports, are
in).
"""

import json
import os
import subprocess
import sys

import pytest

PARL_221_NAMES: dict[str, tuple[str, ...]] = {
    "parl": ("Agent", "Algorithm", "Model", "__version__", "algorithms", "connect", "remote_class"),
    "parl.env": (
        "ActionMappingWrapper",
        "CompatWrapper",
        "V_GYM_CHANGED",
        "V_NPRANDOM_CHANGED",
        "VectorEnv",
        "is_gym_version_ge",
    ),
    "parl.env.atari_wrappers": ("MonitorEnv", "get_wrapper_by_cls", "wrap_deepmind"),
    "parl.env.compat_wrappers": ("CompatWrapper", "V_GYM_CHANGED", "V_NPRANDOM_CHANGED", "is_gym_version_ge"),
    "parl.env.continuous_wrappers": ("ActionMappingWrapper",),
    "parl.env.mujoco_wrappers": ("wrap_rms",),
    "parl.env.multiagent_env": ("MAenv",),
    "parl.env.multiagent_simple_env": ("MAenv",),
    "parl.env.vector_env": ("VectorEnv",),
    "parl.utils": (
        "CSVLogger",
        "DeserializeError",
        "GlobalConfig",
        "LinearDecayScheduler",
        "MAX_INT32",
        "PiecewiseScheduler",
        "ReplayMemory",
        "SerializeError",
        "UtilsError",
        "calc_discount_sum_rewards",
        "calc_gae",
        "check_model_method",
        "check_version_for_fluid",
        "check_version_for_xpu",
        "format_uniform_path",
        "get_fluid_version",
        "get_free_tcp_port",
        "get_gpu_count",
        "get_ip_address",
        "get_port_from_range",
        "global_config",
        "has_func",
        "is_gpu_available",
        "is_port_available",
        "is_xpu_available",
        "isnotebook",
        "kill_process",
        "np_cross_entropy",
        "np_softmax",
        "to_byte",
        "to_str",
    ),
    "parl.utils.csv_logger": ("CSVLogger",),
    "parl.utils.deprecation": ("deprecated",),
    "parl.utils.exceptions": ("DeserializeError", "SerializeError", "UtilsError"),
    "parl.utils.globvars": ("GlobalConfig", "global_config"),
    "parl.utils.logger": (
        "CRITICAL",
        "DEBUG",
        "ERROR",
        "INFO",
        "WARNING",
        "add_stdout_handler",
        "auto_set_dir",
        "critical",
        "debug",
        "error",
        "exception",
        "get_dir",
        "info",
        "remove_handler",
        "setLevel",
        "set_dir",
        "set_level",
        "warn",
        "warning",
    ),
    "parl.utils.machine_info": (
        "get_free_tcp_port",
        "get_gpu_count",
        "get_ip_address",
        "get_port_from_range",
        "is_gpu_available",
        "is_port_available",
        "is_xpu_available",
    ),
    "parl.utils.np_utils": ("np_cross_entropy", "np_softmax"),
    "parl.utils.path_utils": ("format_uniform_path",),
    "parl.utils.replay_memory": ("ReplayMemory",),
    "parl.utils.rl_utils": ("calc_discount_sum_rewards", "calc_gae"),
    "parl.utils.scheduler": ("LinearDecayScheduler", "PiecewiseScheduler"),
    "parl.utils.summary": ("add_histogram", "add_scalar", "close", "flush"),
    "parl.utils.tensorboard": ("add_histogram", "add_scalar", "close", "flush"),
    "parl.utils.time_stat": ("TimeStat",),
    "parl.utils.utils": (
        "MAX_INT32",
        "_HAS_FLUID",
        "_HAS_PADDLE",
        "_HAS_TORCH",
        "_IS_MAC",
        "_IS_WINDOWS",
        "check_model_method",
        "check_version_for_fluid",
        "check_version_for_xpu",
        "get_fluid_version",
        "has_func",
        "isnotebook",
        "kill_process",
        "to_byte",
        "to_str",
    ),
    "parl.utils.visualdl": ("add_histogram", "add_scalar", "close", "flush"),
    "parl.utils.window_stat": ("WindowStat",),
    "parl.algorithms": (
        "A2C",
        "COMA",
        "CQL",
        "DDPG",
        "DDQN",
        "DQN",
        "DecisionTransformer",
        "IMPALA",
        "MADDPG",
        "MAPPO",
        "OAC",
        "PPO",
        "PolicyGradient",
        "PopArt",
        "QMIX",
        "SAC",
        "TD3",
    ),
    "parl.algorithms.paddle": (
        "A2C",
        "CQL",
        "DDPG",
        "DDQN",
        "DQN",
        "IMPALA",
        "MADDPG",
        "OAC",
        "PPO",
        "PolicyGradient",
        "QMIX",
        "SAC",
        "TD3",
    ),
    "parl.algorithms.torch": (
        "A2C",
        "COMA",
        "CQL",
        "DDPG",
        "DDQN",
        "DQN",
        "DecisionTransformer",
        "MADDPG",
        "MAPPO",
        "OAC",
        "PPO",
        "PolicyGradient",
        "PopArt",
        "QMIX",
        "SAC",
        "TD3",
    ),
    "parl.remote": (
        "Client",
        "FutureFunctionError",
        "FutureGetRepeatedlyError",
        "FutureObjectEmpty",
        "GLOBAL_CLIENT",
        "Master",
        "RemoteAttributeError",
        "RemoteDeserializeError",
        "RemoteError",
        "RemoteSerializeError",
        "ResourceError",
        "Worker",
        "connect",
        "disconnect",
        "get_global_client",
        "remote_class",
    ),
    "parl.remote.client": ("Client", "GLOBAL_CLIENT", "connect", "disconnect", "get_global_client"),
    "parl.remote.exceptions": (
        "FutureFunctionError",
        "FutureGetRepeatedlyError",
        "FutureObjectEmpty",
        "RemoteAttributeError",
        "RemoteDeserializeError",
        "RemoteError",
        "RemoteSerializeError",
        "ResourceError",
    ),
    "parl.remote.remote_decorator": ("remote_class",),
}

FLUID = "Paddle's fluid (static-graph) API is not rebuilt (PARL 2.x dygraph only)"
USE_LOGGING = "PARL's re-exports of logging's constants: use logging.DEBUG etc. (set_level takes them or their names)"
SERIALIZE = (
    "raised by PARL's internal serialization helpers of its remote runtime (not public here); the runtime's own "
    "serialization errors are parl.remote.exceptions.RemoteSerializeError (parl_remote.errors.SerializationError)"
)
HANDLERS = "use the logging.Logger that parl.utils.logger.get_logger() returns to manage handlers"

# module -> reason, for a whole PARL module that is not offered (none of its names are then)
ABSENT_MODULES = {
    "parl.utils.deprecation": "PARL's internal decorator for its own deprecated APIs",
    "parl.utils.exceptions": SERIALIZE,
    "parl.utils.path_utils": "xparl's internal helper (Windows paths of shipped files)",
}

# (module, name) -> reason
ABSENT_NAMES = {
    **{("parl.utils", n): SERIALIZE for n in ("DeserializeError", "SerializeError", "UtilsError")},
    **{(m, "check_version_for_fluid"): FLUID for m in ("parl.utils", "parl.utils.utils")},
    **{(m, "get_fluid_version"): FLUID for m in ("parl.utils", "parl.utils.utils")},
    **{
        (m, "check_version_for_xpu"): "Kunlun XPU devices are not supported" for m in ("parl.utils", "parl.utils.utils")
    },
    **{
        (m, "kill_process"): "xparl's internal helper (kills processes whose command line matches a pattern)"
        for m in ("parl.utils", "parl.utils.utils")
    },
    **{(m, "isnotebook"): "the logger's internal helper" for m in ("parl.utils", "parl.utils.utils")},
    ("parl.utils", "format_uniform_path"): "xparl's internal helper (Windows paths of shipped files)",
    **{("parl.utils.logger", n): USE_LOGGING for n in ("CRITICAL", "DEBUG", "ERROR", "INFO", "WARNING")},
    **{("parl.utils.logger", n): HANDLERS for n in ("add_stdout_handler", "remove_handler")},
    **{
        (m, n): "the cluster's processes are started by the xparl CLI (xparl start / connect) or parl.connect()'s "
        "embedded cluster, not by constructing PARL's Master / Worker classes"
        for m in ("parl.remote",)
        for n in ("Master", "Worker")
    },
}
# names that only exist when the named backend's framework is installed
BACKEND_MODULES = {"parl.algorithms.torch": "torch", "parl.algorithms.paddle": "paddle"}

CHECK = """
import importlib, json, sys
import parl
parl.set_backend(sys.argv[1])
names = json.loads(sys.argv[2])
found = {}
for module, wanted in names.items():
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        found[module] = None
        continue
    found[module] = [n for n in wanted if hasattr(mod, n)]
print(json.dumps(found))
"""


def present(backend, modules):
    """{module: [names importable from it] or None when the module does not import}, under ``backend``."""
    wanted = {m: PARL_221_NAMES[m] for m in modules}
    env = {**os.environ, "PARL_BACKEND": backend}
    out = subprocess.run(
        [sys.executable, "-c", CHECK, backend, json.dumps(wanted)], capture_output=True, text=True, timeout=180, env=env
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def check(found):
    problems = []
    for module, names in found.items():
        if module in ABSENT_MODULES:
            if names is not None:
                problems.append(f"{module} imports now: remove it from ABSENT_MODULES")
            continue
        if names is None:
            problems.append(f"{module}: module missing, and not listed in ABSENT_MODULES")
            continue
        for name in PARL_221_NAMES[module]:
            listed = (module, name) in ABSENT_NAMES
            if name in names and listed:
                problems.append(f"{module}.{name} is importable now: remove it from ABSENT_NAMES")
            elif name not in names and not listed:
                problems.append(f"{module}.{name}: missing, and not listed in ABSENT_NAMES with a reason")
    return problems


def test_every_parl_221_name_is_here_or_listed_as_absent_on_torch():
    modules = [m for m in PARL_221_NAMES if BACKEND_MODULES.get(m, "torch") == "torch"]
    assert check(present("torch", modules)) == []


def test_every_parl_221_name_is_here_or_listed_as_absent_on_paddle():
    pytest.importorskip("paddle", reason="paddlepaddle is not installed (the paddle backend's names need it)")
    modules = ["parl", "parl.algorithms", "parl.algorithms.paddle"]
    assert check(present("paddle", modules)) == []


def test_absent_lists_name_only_parl_names():
    for module, name in ABSENT_NAMES:
        assert name in PARL_221_NAMES[module], (module, name)
    assert set(ABSENT_MODULES) <= set(PARL_221_NAMES)
    for reason in [*ABSENT_NAMES.values(), *ABSENT_MODULES.values()]:
        assert len(reason) > 20


def test_the_check_reports_a_missing_name_and_a_stale_absence():
    found = {
        "parl.env.compat_wrappers": ["CompatWrapper", "V_GYM_CHANGED", "V_NPRANDOM_CHANGED"],
        "parl.utils.deprecation": ["deprecated"],
    }
    assert check(found) == [
        "parl.env.compat_wrappers.is_gym_version_ge: missing, and not listed in ABSENT_NAMES with a reason",
        "parl.utils.deprecation imports now: remove it from ABSENT_MODULES",
    ]
