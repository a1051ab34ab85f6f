"""``ESAgent``: the EvoKit tutorial's agent, in Python.

The master agent holds the solver (the strategy's state and the optimizer) and a *model warehouse* of the last
``async_es.max_to_keep`` iterations. Sampling agents made by :meth:`ESAgent.clone` share the master's solver and
warehouse; :meth:`ESAgent.add_noise` perturbs the clone's own copy of the model and returns the compact
:class:`~evokit.sampling_info.SamplingInfo` to log; :meth:`ESAgent.update` rebuilds every sample's noise from
its ``SamplingInfo`` (even one drawn from an older iteration, as EvoKit's ``AsyncESAgent`` does) and moves the
master. The tutorial's calls::

    agent = ESAgent()                      # or ESAgent(model) for a torch / paddle / numpy model
    agent.load_config("config.prototxt")   # or config.toml
    agent.load_inference_model(model_dir)
    agent.init_solver()                    # once; or load_solver(model_dir) later
    sampling_agent = agent.clone()
    info = sampling_agent.add_noise()
    action = sampling_agent.predict(features)
    agent.update(sampling_infos, rewards)
    agent.save_inference_model(dir); agent.save_solver(dir)
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from evokit._atomic import atomic_write
from evokit.config import config_to_prototxt, enum_name, load_config, new_config, parse_prototxt, validate_config
from evokit.errors import ModelFileError, SolverStateError, StaleSampleError
from evokit.models import (
    PaddleBackend,
    load_backend_from_file,
    load_paddle_inference_model,
    make_backend,
    paddle_inference_prefix,
    read_model_file,
    read_npz,
    resolve_model_file,
)
from evokit.noise import make_sampling
from evokit.sampling_info import SamplingInfo
from evokit.solvers import Solver, make_solver

__all__ = ["ESAgent"]

logger = logging.getLogger(__name__)

SOLVER_FILENAME = "solver.npz"


class ESAgent:
    """An evolution-strategies agent: a master (updates) or a sampling clone (adds noise and predicts).

    Args:
        model: the model to evolve: a ``torch.nn.Module``, a ``paddle.nn.Layer``, or a numpy model with
            ``get_weights/set_weights/forward`` (e.g. :class:`evokit.NumpyMLP`). May be omitted when
            :meth:`load_inference_model` is given an ``.npz`` written by :meth:`save_inference_model` of a
            ``NumpyMLP`` (it records the architecture).
        config: optional config path or ``EvoKitConfig`` message (same as calling :meth:`load_config`).
        noise_dir: directory of the shared noise table (default: ``$EVOKIT_NOISE_DIR``, ``/dev/shm``, tmp).
    """

    def __init__(self, model: Any = None, *, config: Any = None, noise_dir: str | None = None) -> None:
        self._backend = make_backend(model) if model is not None else None
        self._config = None
        self._noise_dir = noise_dir
        self._sampling = None
        self._solver: Solver | None = None
        self._warehouse: OrderedDict[int, dict[str, np.ndarray]] = OrderedDict()
        self.model_iter_id = 0
        self._master: ESAgent | None = None
        self._rng: np.random.Generator | None = None
        self._pending: tuple[tuple[int, ...], int] | None = None
        self._next_sampler_id = 0
        self._follows_master = False
        if config is not None:
            self.load_config(config)

    # ------------------------------------------------------------------ setup
    def load_config(self, config: Any) -> ESAgent:
        """Load the config: a path (``.prototxt`` text format or ``.toml``) or an ``EvoKitConfig`` message.

        Raises:
            FileNotFoundError: the file does not exist. ConfigError: it does not parse or is invalid.
        """
        if isinstance(config, (str, os.PathLike)):
            msg = load_config(config)
        elif hasattr(config, "DESCRIPTOR") and config.DESCRIPTOR.name == "EvoKitConfig":
            msg = new_config()
            msg.CopyFrom(config)
            validate_config(msg)
        else:
            raise TypeError(f"config must be a path or an EvoKitConfig message, got {type(config).__name__}")
        self._config = msg
        self._sampling = None
        return self

    @property
    def config(self) -> Any:
        """The ``EvoKitConfig`` message (raises SolverStateError before :meth:`load_config`)."""
        if self._config is None:
            raise SolverStateError("no config loaded; call load_config(path) first")
        return self._config

    @property
    def solver_type(self) -> str:
        """``"BASIC_ES"``, ``"CMA_ES"`` or ``"GA"``."""
        return enum_name(self.config.solver, "type")

    def load_inference_model(self, path: str | os.PathLike) -> ESAgent:
        """Load the model's parameters from a file or a directory written by :meth:`save_inference_model`.

        A directory is searched for ``model.npz`` (numpy), ``model.pt`` (torch ``state_dict``) or
        ``model.pdparams`` (paddle). Without a model given to the constructor, an ``.npz`` of a ``NumpyMLP``
        rebuilds the network, and a paddle inference model directory (``paddle.jit.save(layer, "dir/model")`` or
        ``paddle.static.save_inference_model``: ``<prefix>.pdiparams`` with ``.json`` / ``.pdmodel``, as the
        tutorial's ``load_inference_model(model_dir)``) is loaded with ``paddle.jit.load`` and its parameters evolved.

        Raises:
            FileNotFoundError: no model file. ValueError: no model given and the file cannot rebuild one, or a
            model given for a paddle inference model directory.
            SolverStateError: called on a sampling clone.
        """
        self._require_master("load_inference_model")
        paddle_prefix = paddle_inference_prefix(os.fspath(path))
        if paddle_prefix is not None and not os.path.isfile(os.path.join(os.fspath(path), PaddleBackend.filename)):
            if self._backend is not None:
                raise ValueError(f"{os.fspath(path)!r} is a paddle inference model (paddle.jit.save): it is loaded as "
                                 "its own layer; make the agent without model= (ESAgent(config=...)) to load it")
            self._backend = load_paddle_inference_model(paddle_prefix)
            return self
        path = resolve_model_file(os.fspath(path), self._backend)
        if self._backend is None:
            self._backend = load_backend_from_file(path)
        else:
            self._backend.load(path)
        if self._solver is not None and not np.array_equal(self._backend.get_flat(), self._solver.params):
            logger.warning("load_inference_model changed the parameters after the solver was built; call "
                           "init_solver() or load_solver() again")
        return self

    def init_solver(self) -> ESAgent:
        """Build a fresh solver from the config and the loaded parameters (iteration 0).

        Raises:
            SolverStateError: no config or no model loaded yet, or called on a clone.
        """
        self._require_master("init_solver")
        self._require_model("init_solver")
        self._solver = make_solver(self.config.solver, self._backend.get_flat())
        self._follows_master = False
        self.model_iter_id = 0
        self._warehouse = OrderedDict()
        self._store_snapshot()
        self._backend.set_flat(self._solver.params)
        return self

    # ------------------------------------------------------------------ properties
    @property
    def num_params(self) -> int:
        """Number of parameters evolved (the length of :attr:`params`)."""
        self._require_model("num_params")
        return self._backend.num_params

    @property
    def params(self) -> np.ndarray:
        """float32 [num_params] a copy of this agent's current parameters (perturbed ones on a clone)."""
        self._require_model("params")
        return self._backend.get_flat()

    @property
    def model(self) -> Any:
        """The wrapped model (torch Module, paddle Layer or numpy model)."""
        self._require_model("model")
        return self._backend.model

    @property
    def is_sampling_agent(self) -> bool:
        """True for an agent made by :meth:`clone`."""
        return self._master is not None

    # ------------------------------------------------------------------ sampling
    def clone(self, sampler_id: int | None = None) -> ESAgent:
        """Make a sampling agent that shares this master's solver (updates reach it at its next ``add_noise``).

        Args:
            sampler_id: seeds the clone's key generator together with the config's seed and the current
                iteration, so a run is reproducible. Default: 0, 1, 2, ... per master. Sampling agents in
                different processes must get different ids, or they draw the same noise.

        Clones may run in different threads (each has its own model copy and key generator), but ``update``
        must not run while they call ``add_noise``.

        Returns:
            A sampling :class:`ESAgent` with its own copy of the model.

        Raises:
            SolverStateError: no solver yet (call ``init_solver`` or ``load_solver``), or called on a clone.
        """
        self._require_master("clone")
        self._require_solver("clone")
        if sampler_id is None:
            sampler_id = self._next_sampler_id
            self._next_sampler_id += 1
        if int(sampler_id) < 0:
            raise ValueError(f"sampler_id must be >= 0, got {sampler_id}")
        child = ESAgent.__new__(ESAgent)
        child.__dict__.update(self.__dict__)
        child._backend = self._backend.copy()
        child._master = self
        child._rng = np.random.default_rng(
            [int(self.config.solver.sampling.gaussian_sampling.seed), self.model_iter_id, int(sampler_id)])
        child._pending = None
        return child

    def add_noise(self, sampling_info: SamplingInfo | None = None) -> SamplingInfo:
        """Perturb this sampling agent's parameters with new noise, or with the noise of ``sampling_info``.

        With ``mirrored_sampling`` (default on) consecutive calls return ``+eps`` then ``-eps`` of one key.

        Args:
            sampling_info: reproduce this sample instead of drawing a new one (e.g. to re-serve a logged sample).

        Returns:
            The SamplingInfo to log with the reward this perturbed model earns.

        Raises:
            SolverStateError: called on the master (use ``clone()``).
            StaleSampleError: ``sampling_info`` is from an iteration no longer in the model warehouse.
        """
        if self._master is None:
            raise SolverStateError("add_noise() is for sampling agents; call agent.clone() and add noise to the clone")
        master = self._master
        if sampling_info is None:
            mirrored = master.config.solver.mirrored_sampling
            if mirrored and self._pending is not None and self._pending[1] == master.model_iter_id:
                sampling_info = SamplingInfo(self._pending[0], master.model_iter_id, negative=True)
                self._pending = None
            else:
                key = (master._sampling_method().draw_key(self._rng, master.num_params),
                       *master._solver.draw_extra(self._rng))
                sampling_info = SamplingInfo(key, master.model_iter_id, negative=False)
                self._pending = (key, master.model_iter_id) if mirrored else None
        self._backend.set_flat(master.candidate_params(sampling_info))
        return sampling_info

    def candidate_params(self, sampling_info: SamplingInfo) -> np.ndarray:
        """Return float32 [num_params] the parameters a sample evaluated (rebuilt from its SamplingInfo).

        Raises:
            StaleSampleError: its iteration is not in the model warehouse.
        """
        master = self._master or self
        master._require_solver("candidate_params")
        snapshot = master._snapshot_of(sampling_info)
        noise = master._noise(sampling_info)
        return master._solver.candidate(snapshot, noise, sampling_info.negative, sampling_info.key[1:])

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Run the (perturbed, on a clone) model: ``features`` float32 [B, in_dim] -> numpy [B, out_dim]."""
        self._require_model("predict")
        return self._backend.predict(features)

    # ------------------------------------------------------------------ update
    def update(self, sampling_infos: Sequence[SamplingInfo], rewards: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """Update the master from samples and their rewards (maximised); the iteration id grows by one.

        Samples from iterations still in the warehouse are applied (their model difference is accounted for);
        older ones are dropped with a warning.

        Args:
            sampling_infos: N records from ``add_noise`` (any mix of iterations).
            rewards: float [N] the reward of each.

        Returns:
            Statistics: ``model_iter_id`` (the new one), ``num_samples`` used, ``num_stale`` dropped, and the
            solver's own (``grad_norm``, ``sigma``, ``best_reward``, ...).

        Raises:
            SolverStateError: called on a clone or before the solver exists.
            ValueError: lengths differ, no samples, or a reward is not finite.
            StaleSampleError: every sample is older than the warehouse keeps.
        """
        self._require_master("update")
        self._require_solver("update")
        if self._follows_master:
            raise SolverStateError("this agent draws samples for another master (set_sampling_state); send the "
                                   "samples to that master's update()")
        infos = list(sampling_infos)
        rewards_arr = np.asarray(rewards, dtype=np.float64).ravel()
        if len(infos) != rewards_arr.shape[0]:
            raise ValueError(f"got {len(infos)} sampling_infos but {rewards_arr.shape[0]} rewards")
        if not infos:
            raise ValueError("update() needs at least one sample")
        if not np.all(np.isfinite(rewards_arr)):
            raise ValueError("rewards contain NaN or inf")
        for info in infos:
            if not isinstance(info, SamplingInfo):
                raise TypeError(f"sampling_infos must hold SamplingInfo objects, got {type(info).__name__}")
            if len(info.key) != 1 + self._solver.num_extra_keys:
                raise ValueError(f"a {self.solver_type} SamplingInfo has {1 + self._solver.num_extra_keys} key "
                                 f"ints, got {info.key}; was the log written with another solver type?")
        keep = np.array([i.model_iter_id in self._warehouse for i in infos])
        num_stale = int((~keep).sum())
        if num_stale:
            future = [i.model_iter_id for i in infos if i.model_iter_id > self.model_iter_id]
            if future:
                raise StaleSampleError(f"samples claim model iteration {max(future)} but this agent is at "
                                       f"{self.model_iter_id}; load the solver the samples were drawn from")
            if num_stale == len(infos):
                raise StaleSampleError(
                    f"all {len(infos)} samples are from iterations older than the {len(self._warehouse)} kept "
                    f"({min(self._warehouse)}..{self.model_iter_id}); raise async_es.max_to_keep")
            logger.warning("dropping %d of %d samples from iterations no longer in the model warehouse",
                           num_stale, len(infos))
            infos = [i for i, k in zip(infos, keep, strict=True) if k]
            rewards_arr = rewards_arr[keep]
        stats = self._solver.update(infos, rewards_arr, self._noise, self._warehouse, self.model_iter_id)
        self.model_iter_id += 1
        self._store_snapshot()
        self._backend.set_flat(self._solver.params)
        return {"model_iter_id": self.model_iter_id, "num_samples": len(infos), "num_stale": num_stale, **stats}

    # ------------------------------------------------------------------ distributed sampling
    def get_sampling_state(self) -> dict[str, np.ndarray]:
        """What a sampling process needs to draw samples of the current iteration: ``model_iter_id`` plus the
        solver's snapshot (BASIC_ES: ``theta``; CMA_ES: ``mean, sigma, bd``; GA: ``elites``)."""
        self._require_master("get_sampling_state")
        self._require_solver("get_sampling_state")
        return {"model_iter_id": np.asarray(self.model_iter_id), **self._warehouse[self.model_iter_id]}

    def set_sampling_state(self, state: dict[str, np.ndarray]) -> None:
        """Adopt a master's :meth:`get_sampling_state` on a sampling-side master (after ``init_solver``), so that
        its clones draw samples of that iteration. Afterwards its own ``update`` raises SolverStateError (its solver
        does not follow the master's); ``init_solver`` or ``load_solver`` make it a master again."""
        self._require_master("set_sampling_state")
        self._require_solver("set_sampling_state")
        self._follows_master = True
        it = int(state["model_iter_id"])
        snapshot = {k: np.asarray(v) for k, v in state.items() if k != "model_iter_id"}
        self.model_iter_id = it
        self._warehouse[it] = snapshot
        self._trim_warehouse()
        if "theta" in snapshot:
            self._backend.set_flat(snapshot["theta"])
        elif "mean" in snapshot:
            self._backend.set_flat(snapshot["mean"].astype(np.float32))
        elif "elites" in snapshot:
            self._backend.set_flat(snapshot["elites"][0])

    # ------------------------------------------------------------------ persistence
    def save_inference_model(self, directory: str | os.PathLike) -> str:
        """Write the model's current parameters to ``directory`` (``model.npz`` / ``model.pt`` /
        ``model.pdparams``); return the file path.

        Crash-safe: the file is written under a temporary name and renamed into place, so a process killed during
        the save leaves the previous file or the new one, whole.

        Raises:
            SolverStateError: no model. OSError: the file cannot be written (an earlier one is then untouched).
        """
        self._require_model("save_inference_model")
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        return self._backend.save(directory)

    def save_solver(self, directory: str | os.PathLike) -> str:
        """Write the solver (strategy state, optimizer state, iteration id, model warehouse) to
        ``directory/solver.npz``; return the path.

        Crash-safe like :meth:`save_inference_model`. The model and the solver are two files written by two calls;
        :meth:`load_solver` refuses a pair from different iterations.

        Raises:
            SolverStateError: no solver, or called on a clone. OSError: the file cannot be written.
        """
        arrays = self._solver_arrays("save_solver")
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, SOLVER_FILENAME)
        with atomic_write(path) as file:
            np.savez(file, **arrays)
        try:
            os.remove(path + ".tmp.npz")  # the temporary name of evokit 3.0's save, left by a killed save
        except FileNotFoundError:
            pass
        return path

    def load_solver(self, directory: str | os.PathLike) -> ESAgent:
        """Restore a solver written by :meth:`save_solver` (after ``load_config`` and ``load_inference_model``).

        Raises:
            FileNotFoundError: no ``solver.npz`` there.
            ModelFileError: the file is empty, truncated, corrupt, or lacks an array ``save_solver`` writes (the
                agent is then unchanged).
            SolverStateError: the solver type or parameter count differs from the config / model, or the loaded
                inference model is not the solver's current model (the two come from different iterations).
        """
        self._require_master("load_solver")
        self._require_model("load_solver")
        directory = os.fspath(directory)
        path = directory if directory.endswith(".npz") else os.path.join(directory, SOLVER_FILENAME)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no solver file {path!r}; write one with save_solver(dir) after init_solver()")
        fix = "load an earlier copy, or save the solver again"
        arrays = read_model_file(path, "solver .npz", read_npz, fix)
        self._load_solver_arrays(arrays, repr(path), "save_solver did not write it; " + fix,
                                 "load both from one directory")
        return self

    def state_dict(self) -> dict[str, Any]:
        """The master's whole state: the model's parameters (``model/params``, float32 ``[num_params]``) and what
        :meth:`save_solver` writes (strategy and optimizer state, iteration id and model warehouse as numeric numpy
        arrays; the solver type and config as strings). For a run's checkpoint
        (``parl.utils.Checkpointer.register(agent=agent)``); the arrays are copies.

        Raises:
            SolverStateError: no solver, or called on a clone.
        """
        state: dict[str, Any] = self._solver_arrays("state_dict")
        for key in ("meta/solver_type", "meta/config"):
            state[key] = str(state[key])
        state["model/params"] = np.array(self._backend.get_flat(), copy=True)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (after ``load_config``, with a model of the same parameter count): the
        model's parameters, then the solver, the iteration id and the warehouse. The agent is unchanged when
        the state is refused.

        Raises:
            ModelFileError: an array :meth:`state_dict` returns is missing.
            SolverStateError: the solver type or parameter count differs from the config / model.
        """
        self._require_master("load_state_dict")
        self._require_model("load_state_dict")
        if "model/params" not in state:
            raise ModelFileError("the state lacks ['model/params'], so ESAgent.state_dict did not make it; pass what "
                                 "state_dict() returned")
        params = np.asarray(state["model/params"])
        if params.shape != (self.num_params,):
            raise SolverStateError(f"the state's model has {params.size} parameters, this agent's {self.num_params}")
        before = self._backend.get_flat().copy()
        self._backend.set_flat(params)
        try:
            self._load_solver_arrays(state, "the state", "ESAgent.state_dict did not make it",
                                     "pass one state_dict() whole")
        except Exception:
            self._backend.set_flat(before)
            raise

    def _solver_arrays(self, what: str) -> dict[str, np.ndarray]:
        """The arrays of :meth:`save_solver` (``meta/*``, ``solver/*``, ``warehouse/<iter>/*``)."""
        self._require_master(what)
        self._require_solver(what)
        arrays: dict[str, np.ndarray] = {
            "meta/solver_type": np.asarray(self.solver_type),
            "meta/config": np.asarray(config_to_prototxt(self.config)),
            "meta/num_params": np.asarray(self.num_params),
            "meta/model_iter_id": np.asarray(self.model_iter_id),
            "meta/warehouse_iters": np.asarray(list(self._warehouse), dtype=np.int64),
        }
        arrays.update({f"solver/{k}": np.array(v, copy=True) for k, v in self._solver.state_dict().items()})
        for it, snap in self._warehouse.items():
            arrays.update({f"warehouse/{it}/{k}": np.array(v, copy=True) for k, v in snap.items()})
        return arrays

    def _load_solver_arrays(self, arrays: Any, where: str, missing_fix: str, mismatch_fix: str) -> None:
        """Adopt the solver of :meth:`_solver_arrays`' ``arrays`` (read from ``where``) for the loaded model."""
        missing = [k for k in ("meta/solver_type", "meta/config", "meta/num_params", "meta/model_iter_id",
                               "meta/warehouse_iters") if k not in arrays]
        if missing:
            raise ModelFileError(f"cannot load {where}: it lacks {missing}, so {missing_fix}")
        saved_type = str(arrays["meta/solver_type"])
        if saved_type != self.solver_type:
            raise SolverStateError(f"{where} holds a {saved_type} solver but the config says {self.solver_type}")
        if int(arrays["meta/num_params"]) != self.num_params:
            raise SolverStateError(f"{where} is for {int(arrays['meta/num_params'])} parameters, the model has "
                                   f"{self.num_params}")
        saved_config = parse_prototxt(str(arrays["meta/config"]))
        if saved_config != self.config:
            logger.warning("the solver in %s was saved with a different config; using the loaded config", where)
        solver = make_solver(self.config.solver, self._backend.get_flat())
        solver.load_state_dict({k[len("solver/"):]: np.asarray(v) for k, v in arrays.items()
                                if k.startswith("solver/")})
        if not np.array_equal(solver.params, self._backend.get_flat()):
            raise SolverStateError(f"the inference model loaded is not the model of the solver in {where} "
                                   f"(iteration {int(arrays['meta/model_iter_id'])}); {mismatch_fix}")
        warehouse: OrderedDict[int, dict[str, np.ndarray]] = OrderedDict()
        for it in np.asarray(arrays["meta/warehouse_iters"]).tolist():
            prefix = f"warehouse/{it}/"
            warehouse[int(it)] = {k[len(prefix):]: np.asarray(v) for k, v in arrays.items() if k.startswith(prefix)}
        self._solver = solver
        self._follows_master = False
        self._warehouse = warehouse
        self.model_iter_id = int(arrays["meta/model_iter_id"])
        self._trim_warehouse()

    # ------------------------------------------------------------------ internals
    def _sampling_method(self):
        if self._sampling is None:
            self._sampling = make_sampling(self.config.solver.sampling, noise_dir=self._noise_dir)
        return self._sampling

    def _noise(self, info: SamplingInfo) -> np.ndarray:
        return self._sampling_method().noise(info.key[0], self.num_params)

    def _snapshot_of(self, info: SamplingInfo) -> dict[str, np.ndarray]:
        try:
            return self._warehouse[info.model_iter_id]
        except KeyError:
            raise StaleSampleError(f"model iteration {info.model_iter_id} is not in the model warehouse (kept: "
                                   f"{list(self._warehouse)}); raise async_es.max_to_keep") from None

    def _store_snapshot(self) -> None:
        self._warehouse[self.model_iter_id] = self._solver.snapshot()
        self._trim_warehouse()

    def _trim_warehouse(self) -> None:
        max_to_keep = int(self.config.async_es.max_to_keep)
        while len(self._warehouse) > max_to_keep:
            self._warehouse.popitem(last=False)

    def _require_master(self, what: str) -> None:
        if self._master is not None:
            raise SolverStateError(f"{what}() is for the master agent, not a sampling clone")

    def _require_model(self, what: str) -> None:
        if self._backend is None:
            raise SolverStateError(f"{what}() needs a model: pass ESAgent(model) or call load_inference_model(path)")

    def _require_solver(self, what: str) -> None:
        if self._config is None:
            raise SolverStateError(f"{what}() needs a config: call load_config(path) first")
        if self._solver is None:
            raise SolverStateError(f"{what}() needs a solver: call init_solver() (or load_solver(dir)) after "
                                   "load_inference_model()")

