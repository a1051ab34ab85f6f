"""The NeurIPS 2018 "AI for Prosthetics" task (osim-rl 2.1.x ``ProstheticsEnv``) on OpenSim 4.6, as a gymnasium env.

The 2018 environment shipped in osim-rl 2.1.x (``osim/env/osim.py``, on OpenSim 4.0 from conda). osim-rl 3.0.11, the
one on the package index, has dropped ``ProstheticsEnv``, and every osim-rl env calls
``PrescribedController.prescribeControlForActuator(int, Function*)``, which OpenSim 4.6 removed (it raises
``RuntimeError: ... is deprecated. Use prescribeControlForActuator(const std::string&, Function*)``). This module is
osim-rl 2.1.5's ``OsimModel`` + ``ProstheticsEnv`` rewritten against the 4.6 Python API (controls are prescribed by
actuator name; nothing else of the simulation changed) with the gymnasium API:

* model: ``models/gait14dof22musc_pros_20180507.osim`` (the file osim-rl 2.1.5 and 3.0.11 ship, unchanged): a 3-D
  musculoskeletal model with a prosthetic right leg, 19 muscles (the action: excitations in ``[0, 1]``);
* one step = 0.01 s of simulation (OpenSim ``Manager``, integrator accuracy ``5e-5``);
* observation: the 2018 state dict (``project=False``: ``joint_pos/vel/acc``, ``body_pos/vel/acc``,
  ``body_pos_rot/vel_rot/acc_rot``, ``forces``, ``muscles``, ``markers``, ``misc`` and, at difficulty 1,
  ``target_vel``) or the 2018 160-float vector (``project=True``);
* round 1 (``difficulty=0``): 300 steps, reward ``9 - (v_pelvis_x - 3)**2``;
* round 2 (``difficulty=1``): 1000 steps, reward ``10 - (v_x - t_x)**2 - (v_z - t_z)**2 - 0.001 * sum(a_i**2)``
  (``v``: pelvis velocity, ``t``: target velocity, ``a``: muscle activations); the target starts at 1.25 m/s,
  heading 0, and changes at the steps ``cumsum(Poisson(300, size=10))``: speed ``+= U(-0.5, 0.5)``,
  heading ``+= U(-pi/8, pi/8)``;
* an episode terminates when the pelvis is lower than 0.6 m, and is truncated at the step limit.

Reference: Kidziński et al. 2019, "Artificial Intelligence for Prosthetics: Challenge Solutions" (the NeurIPS 2018
competition report); the 2018 rules: osim-rl v2.1.5 (https://github.com/stanfordnmbl/osim-rl), ``osim/env/osim.py``.
"""

from __future__ import annotations

import importlib
import math
import os
import random
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["ProstheticsEnv", "OpenSimMissingError", "import_opensim", "MODEL_PATH", "STEP_SIZE"]

HERE = os.path.dirname(os.path.abspath(__file__))
#: the 2018 model (osim-rl's gait14dof22musc_pros_20180507.osim, unchanged)
MODEL_PATH = os.path.join(HERE, "models", "gait14dof22musc_pros_20180507.osim")
STEP_SIZE = 0.01  # seconds of simulation per env step
INSTALL_HINT = "pip install 'opensim>=4.6' (the OpenSim 4.6 Python wheels, Linux/macOS/Windows, Python 3.11+)"


class OpenSimMissingError(ImportError):
    """The ``opensim`` package is not installed; the message names the fix."""


def import_opensim():
    """Import ``opensim`` (quietly: only its errors are logged).

    Raises:
        OpenSimMissingError: ``opensim`` is not installed (``pip install 'opensim>=4.6'``).
    """
    try:
        opensim = importlib.import_module("opensim")
    except ImportError as err:
        raise OpenSimMissingError(f"the prosthetics env needs OpenSim's Python package: {INSTALL_HINT} "
                                  f"({type(err).__name__}: {err})") from err
    opensim.Logger.setLevelString("error")
    return opensim


class OsimModel:
    """osim-rl 2.1.5's ``OsimModel`` on the OpenSim 4.6 API: the model, one ``PrescribedController`` whose
    ``Constant`` functions are the muscle excitations, and the integration of 0.01 s per step."""

    def __init__(self, model_path: str, integrator_accuracy: float = 5e-5):
        opensim = self.opensim = import_opensim()
        if not os.path.isfile(model_path):
            raise FileNotFoundError(f"no OpenSim model at {model_path!r}")
        self.integrator_accuracy = integrator_accuracy
        self.model = opensim.Model(model_path)
        self.model.initSystem()
        self.muscle_set = self.model.getMuscles()
        brain = opensim.PrescribedController()
        self.max_forces = []
        for j in range(self.muscle_set.getSize()):
            muscle = self.muscle_set.get(j)
            brain.addActuator(muscle)
            # OpenSim 4.6: by name (the int overload osim-rl calls raises "is deprecated")
            brain.prescribeControlForActuator(muscle.getName(), opensim.Constant(1.0))
            self.max_forces.append(muscle.getMaxIsometricForce())
        self.model.addController(brain)
        self.model.initSystem()
        self.body_set, self.joint_set = self.model.getBodySet(), self.model.getJointSet()
        self.force_set, self.marker_set = self.model.getForceSet(), self.model.getMarkerSet()
        controller = opensim.PrescribedController.safeDownCast(self.model.getControllerSet().get(0))
        functions = controller.get_ControlFunctions()
        # function j drives actuator j: prescribeControlForActuator appends in the order of the calls above (the
        # functions carry no name in 4.6; tests/test_example_prosthetics.py checks the mapping on activations)
        self.controls = [opensim.Constant.safeDownCast(functions.get(j)) for j in range(functions.getSize())]
        if len(self.controls) != self.muscle_set.getSize():
            raise RuntimeError(f"expected {self.muscle_set.getSize()} control functions, got {len(self.controls)}")
        self.state = None
        self.istep = 0
        self.last_action = np.zeros(len(self.controls))

    @property
    def action_size(self) -> int:
        return len(self.controls)

    def actuate(self, action: np.ndarray) -> None:
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (len(self.controls),):
            raise ValueError(f"action must have shape ({len(self.controls)},), got {action.shape}")
        if np.any(np.isnan(action)):
            raise ValueError("NaN passed in the activation vector. Values in [0,1] interval are required.")
        action = np.clip(action, 0.0, 1.0)
        self.last_action = action
        for func, value in zip(self.controls, action, strict=True):
            func.setValue(float(value))

    def get_activations(self) -> list[float]:
        return [self.muscle_set.get(j).getActivation(self.state) for j in range(self.muscle_set.getSize())]

    def reset(self) -> None:
        self.state = self.model.initializeState()
        self.model.equilibrateMuscles(self.state)
        self.state.setTime(0)
        self.istep = 0
        self.manager = self.opensim.Manager(self.model)
        self.manager.setIntegratorAccuracy(self.integrator_accuracy)
        self.manager.initialize(self.state)

    def integrate(self) -> None:
        self.istep += 1
        self.state = self.manager.integrate(STEP_SIZE * self.istep)

    def compute_state_desc(self) -> dict:
        """osim-rl 2.1.5's state dict (same keys, same values)."""
        state = self.state
        self.model.realizeAcceleration(state)
        res: dict[str, Any] = {k: {} for k in ("joint_pos", "joint_vel", "joint_acc")}
        for i in range(self.joint_set.getSize()):
            joint = self.joint_set.get(i)
            coords = [joint.get_coordinates(c) for c in range(joint.numCoordinates())]
            name = joint.getName()
            res["joint_pos"][name] = [c.getValue(state) for c in coords]
            res["joint_vel"][name] = [c.getSpeedValue(state) for c in coords]
            res["joint_acc"][name] = [c.getAccelerationValue(state) for c in coords]
        for key in ("body_pos", "body_vel", "body_acc", "body_pos_rot", "body_vel_rot", "body_acc_rot"):
            res[key] = {}
        for i in range(self.body_set.getSize()):
            body = self.body_set.get(i)
            name = body.getName()
            transform, vel, acc = (body.getTransformInGround(state), body.getVelocityInGround(state),
                                   body.getAccelerationInGround(state))
            res["body_pos"][name] = [transform.p()[k] for k in range(3)]
            res["body_vel"][name] = [vel.get(1).get(k) for k in range(3)]
            res["body_acc"][name] = [acc.get(1).get(k) for k in range(3)]
            rot = transform.R().convertRotationToBodyFixedXYZ()
            res["body_pos_rot"][name] = [rot.get(k) for k in range(3)]
            res["body_vel_rot"][name] = [vel.get(0).get(k) for k in range(3)]
            res["body_acc_rot"][name] = [acc.get(0).get(k) for k in range(3)]
        res["forces"] = {}
        for i in range(self.force_set.getSize()):
            force = self.force_set.get(i)
            values = force.getRecordValues(state)
            res["forces"][force.getName()] = [values.get(k) for k in range(values.size())]
        res["muscles"] = {}
        for i in range(self.muscle_set.getSize()):
            muscle = self.muscle_set.get(i)
            res["muscles"][muscle.getName()] = {
                "activation": muscle.getActivation(state), "fiber_length": muscle.getFiberLength(state),
                "fiber_velocity": muscle.getFiberVelocity(state), "fiber_force": muscle.getFiberForce(state)}
        res["markers"] = {}
        for i in range(self.marker_set.getSize()):
            marker = self.marker_set.get(i)
            res["markers"][marker.getName()] = {
                "pos": [marker.getLocationInGround(state)[k] for k in range(3)],
                "vel": [marker.getVelocityInGround(state)[k] for k in range(3)],
                "acc": [marker.getAccelerationInGround(state)[k] for k in range(3)]}
        res["misc"] = {
            "mass_center_pos": [self.model.calcMassCenterPosition(state)[k] for k in range(3)],
            "mass_center_vel": [self.model.calcMassCenterVelocity(state)[k] for k in range(3)],
            "mass_center_acc": [self.model.calcMassCenterAcceleration(state)[k] for k in range(3)]}
        return res


def _rect(row: np.ndarray) -> np.ndarray:
    r, theta = row
    return np.array([r * math.cos(theta), 0.0, r * math.sin(theta)])


def generate_targets(time_limit: int, rng: np.random.RandomState, py_rng: random.Random,
                     poisson_lambda: int = 300) -> np.ndarray:
    """osim-rl 2.1.5's ``generate_new_targets``: the target velocity of each step, float64 ``[time_limit + 1, 3]``
    (x, y = 0, z; m/s). Speed 1.25 and heading 0 at step 0; at the steps ``cumsum(rng.poisson(poisson_lambda, 10))``
    the speed moves by ``±U(-0.5, 0.5)`` and the heading by ``±U(-pi/8, pi/8)``."""
    nsteps = time_limit + 1
    velocity, heading = np.zeros(nsteps), np.zeros(nsteps)
    velocity[0] = 1.25
    change = set(np.cumsum(rng.poisson(poisson_lambda, 10)).tolist())
    for i in range(1, nsteps):
        velocity[i], heading[i] = velocity[i - 1], heading[i - 1]
        if i in change:
            velocity[i] += py_rng.choice([-1, 1]) * py_rng.uniform(-0.5, 0.5)
            heading[i] += py_rng.choice([-1, 1]) * py_rng.uniform(-math.pi / 8, math.pi / 8)
    return np.apply_along_axis(_rect, 1, np.vstack((velocity, heading)).transpose())


def project_observation(state_desc: dict) -> list[float]:
    """osim-rl 2.1.5's ``ProstheticsEnv.get_observation`` (prosthetic model): the 160-float vector."""
    res: list[float] = []
    pelvis = None
    for body_part in ["pelvis", "head", "torso", "toes_l", "toes_r", "talus_l", "talus_r"]:
        if body_part in ["toes_r", "talus_r"]:
            res += [0] * 9
            continue
        cur = []
        cur += state_desc["body_pos"][body_part][0:2]
        cur += state_desc["body_vel"][body_part][0:2]
        cur += state_desc["body_acc"][body_part][0:2]
        cur += state_desc["body_pos_rot"][body_part][2:]
        cur += state_desc["body_vel_rot"][body_part][2:]
        cur += state_desc["body_acc_rot"][body_part][2:]
        if body_part == "pelvis":
            pelvis = cur
            res += cur[1:]
        else:
            cur[:2] = [cur[i] - pelvis[i] for i in range(2)]
            cur[6:7] = [cur[i] - pelvis[i] for i in range(6, 7)]
            res += cur
    for joint in ["ankle_l", "ankle_r", "back", "hip_l", "hip_r", "knee_l", "knee_r"]:
        res += state_desc["joint_pos"][joint]
        res += state_desc["joint_vel"][joint]
        res += state_desc["joint_acc"][joint]
    for muscle in sorted(state_desc["muscles"].keys()):
        res += [state_desc["muscles"][muscle][k] for k in ("activation", "fiber_length", "fiber_velocity")]
    cm_pos = [state_desc["misc"]["mass_center_pos"][i] - pelvis[i] for i in range(2)]
    return res + cm_pos + state_desc["misc"]["mass_center_vel"] + state_desc["misc"]["mass_center_acc"]


class ProstheticsEnv(gym.Env):
    """The 2018 AI-for-Prosthetics environment (osim-rl 2.1.5 ``ProstheticsEnv``, 3-D prosthetic model) on
    OpenSim 4.6, with the gymnasium API.

    Args:
        difficulty: 0 = round 1 (300 steps, run at 3 m/s), 1 = round 2 (1000 steps, follow the target velocity).
        project: True: observations are the 2018 160-float vector (float32 ``[160]``); False: the 2018 state dict
            (nested dicts of floats and lists; ``target_vel`` at difficulty 1).
        integrator_accuracy: OpenSim's integrator accuracy (the 2018 default ``5e-5``).
        time_limit: overrides the round's step limit (e.g. a short smoke test).
        model_path: the ``.osim`` model (default: the 2018 prosthetic model).

    ``step(action)``: ``action`` float ``[19]`` muscle excitations, clipped to ``[0, 1]``. Returns ``(obs, reward,
    terminated, truncated, info)``: ``terminated`` when the pelvis is below 0.6 m, ``truncated`` at the step limit;
    ``info["state_desc"]`` is the state dict (also with ``project=True``). ``env.targets`` holds the target
    velocity of every step (float64 ``[time_limit + 1, 3]``, m/s).

    Raises:
        OpenSimMissingError: ``opensim`` is not installed (``pip install 'opensim>=4.6'``).
        ValueError: ``difficulty`` not 0 or 1; a malformed or NaN action.
    """

    metadata = {"render_modes": []}

    def __init__(self, difficulty: int = 1, project: bool = True, integrator_accuracy: float = 5e-5,
                 time_limit: int | None = None, model_path: str = MODEL_PATH):
        if difficulty not in (0, 1):
            raise ValueError(f"difficulty must be 0 (round 1) or 1 (round 2), got {difficulty!r}")
        self.osim_model = OsimModel(model_path, integrator_accuracy)
        self.difficulty, self.project = difficulty, project
        self.time_limit = int(time_limit) if time_limit is not None else (300 if difficulty == 0 else 1000)
        n = self.osim_model.action_size
        self.action_space = gym.spaces.Box(0.0, 1.0, (n,), np.float32)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (160,), np.float32)
        self._np_rng, self._py_rng = np.random.RandomState(0), random.Random(0)
        self.targets = None
        self.state_desc = self.prev_state_desc = None

    @property
    def istep(self) -> int:
        return self.osim_model.istep

    def get_state_desc(self) -> dict:
        d = self.osim_model.compute_state_desc()
        if self.difficulty > 0:
            d["target_vel"] = self.targets[self.osim_model.istep, :].tolist()
        return d

    def _obs(self, state_desc: dict):
        return np.asarray(project_observation(state_desc), np.float32) if self.project else state_desc

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode; ``seed`` reseeds the target schedule (NumPy ``RandomState`` and ``random.Random``,
        as osim-rl seeds ``np.random`` and ``random``). ``options={"targets": array [time_limit + 1, 3]}`` sets
        the target velocities instead (e.g. a fixed speed)."""
        super().reset(seed=seed)
        if seed is not None:
            self._np_rng, self._py_rng = np.random.RandomState(seed), random.Random(seed)
        targets = (options or {}).get("targets")
        if targets is not None:
            targets = np.asarray(targets, np.float64)
            if targets.shape != (self.time_limit + 1, 3):
                raise ValueError(f"options['targets'] must have shape ({self.time_limit + 1}, 3), got {targets.shape}")
            self.targets = targets
        else:
            self.targets = generate_targets(self.time_limit, self._np_rng, self._py_rng)
        self.osim_model.reset()
        self.prev_state_desc = None
        self.state_desc = self.get_state_desc()
        return self._obs(self.state_desc), {"state_desc": self.state_desc}

    def reward(self) -> float:
        """The round's reward of the last step (osim-rl 2.1.5's ``reward_round1`` / ``reward_round2``)."""
        d = self.state_desc
        if self.difficulty == 0:
            return 9.0 - (d["body_vel"]["pelvis"][0] - 3.0) ** 2
        penalty = float(np.sum(np.array(self.osim_model.get_activations()) ** 2) * 0.001)
        penalty += (d["body_vel"]["pelvis"][0] - d["target_vel"][0]) ** 2
        penalty += (d["body_vel"]["pelvis"][2] - d["target_vel"][2]) ** 2
        return 10.0 - penalty

    def step(self, action):
        if self.state_desc is None:
            raise RuntimeError("call reset() before step()")
        self.prev_state_desc = self.state_desc
        self.osim_model.actuate(np.asarray(action, np.float64).reshape(-1))
        self.osim_model.integrate()
        self.state_desc = self.get_state_desc()
        terminated = self.state_desc["body_pos"]["pelvis"][1] < 0.6
        truncated = (not terminated) and self.osim_model.istep >= self.time_limit
        return self._obs(self.state_desc), float(self.reward()), terminated, truncated, {"state_desc": self.state_desc}


def measure_speed(steps: int = 300, seed: int = 0) -> dict:
    """Simulator speed of one env: ``steps`` round-2 steps with 0.05 excitation (episodes restart on a fall).
    Returns wall and CPU seconds per step and steps per CPU second."""
    import time

    env = ProstheticsEnv(difficulty=1)
    env.reset(seed=seed)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(np.full(env.action_space.shape, 0.05))
        if terminated or truncated:
            env.reset()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"steps": steps, "wall_s_per_step": wall / steps, "cpu_s_per_step": cpu / steps,
            "steps_per_cpu_s": steps / cpu, "loadavg": os.getloadavg()}


if __name__ == "__main__":
    print(measure_speed())
