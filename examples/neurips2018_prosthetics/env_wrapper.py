"""PARL's training env for the 2018 prosthetics task (PARL's ``env_wrapper.py``, gymnasium API): the target
schedules of the curriculum, the shaped rewards, frame skip 4, actions in ``[-1, 1]`` and the pelvis-based scaled
observation (float32 ``[189]``).

Source: PaddlePaddle/PARL ``examples/NeurIPS2018-AI-for-Prosthetics-Challenge/env_wrapper.py`` (``CustomR2Env``,
``RunFastestReward`` / ``FixedTargetSpeedReward`` / ``Round2Reward``, ``FrameSkip``, ``ActionScale``,
``PelvisBasedObs``) folded into one class; the numbers are PARL's.
"""

from __future__ import annotations

import math
import os
import random
from collections import OrderedDict

import numpy as np
from prosthetics_env import MODEL_PATH, ProstheticsEnv

__all__ = ["TrainingEnv", "REWARD_TYPES", "OBS_DIM", "VEL_DIM", "ACT_DIM"]

MAXTIME_LIMIT = 1000
REWARD_TYPES = ("RunFastest", "FixedTargetSpeed", "Round2")
ACT_DIM = 19
VEL_DIM = 4  # the target-driven features at the end of the observation
OBS_DIM = 185 + VEL_DIM
SCALER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pelvisBasedObs_scaler.npz")
BODIES = ["pelvis", "femur_r", "pros_tibia_r", "pros_foot_r", "femur_l", "tibia_l", "talus_l", "calcn_l", "toes_l",
          "torso", "head"]


def _core_matrix(yaw: float) -> np.ndarray:
    m = np.zeros((3, 3))
    m[0][0], m[0][2], m[1][1], m[2][0], m[2][2] = math.cos(yaw), -math.sin(yaw), 1, math.sin(yaw), math.cos(yaw)
    return m


class TrainingEnv:
    """One simulator as PARL's clients wrapped it (``CustomR2Env`` -> reward shaping -> ``FrameSkip(4)`` ->
    ``ActionScale`` -> ``PelvisBasedObs``).

    Args:
        reward_type: ``"RunFastest"``, ``"FixedTargetSpeed"`` (needs ``target_v``) or ``"Round2"``.
        target_v: the fixed target speed (m/s) of ``FixedTargetSpeed``.
        act_penalty_lowerbound / act_penalty_coeff / vel_penalty_coeff: PARL's shaping coefficients.
        stage: how many times the target changes (0: always 1.25 m/s; 3: like round 2); ``None``: the round-2
            schedule of the rules.
        discrete_data / discrete_bin: draw the last stage's target speed uniformly over ``discrete_bin`` bins.
        frame_skip: simulator steps per agent step (PARL: 4).
        time_limit: simulator steps per episode (the rules: 1000).
        seed: seeds the targets.
        model_path / scaler_path: the .osim model and PARL's observation scaler (default: this folder's).

    ``reset() -> obs`` float32 ``[189]``; ``step(action)`` with ``action`` float ``[19]`` in ``[-1, 1]`` returns
    ``(obs, shaping_reward, r2_reward, done, info)`` where ``r2_reward`` is the sum of the rules' rewards over the
    skipped frames, ``done`` is True when the pelvis fell or the time limit is reached, and ``info`` has
    ``target_changed``, ``timeout`` (the time limit, not a fall) and ``frames``.

    Raises:
        ValueError: an unknown ``reward_type`` or a missing coefficient.
        OpenSimMissingError: ``opensim`` is not installed.
    """

    def __init__(self, reward_type: str = "Round2", target_v: float | None = None,
                 act_penalty_lowerbound: float | None = None, act_penalty_coeff: float = 5.0,
                 vel_penalty_coeff: float = 1.0, stage: int | None = 0, discrete_data: bool = False,
                 discrete_bin: int = 10, frame_skip: int = 4, time_limit: int = MAXTIME_LIMIT, seed: int = 0,
                 model_path: str = MODEL_PATH, scaler_path: str = SCALER):
        if reward_type not in REWARD_TYPES:
            raise ValueError(f"reward_type must be one of {REWARD_TYPES}, got {reward_type!r}")
        if reward_type == "FixedTargetSpeed" and target_v is None:
            raise ValueError("reward_type 'FixedTargetSpeed' needs target_v (e.g. --target-v 3.0)")
        if reward_type != "RunFastest" and act_penalty_lowerbound is None:
            raise ValueError(f"reward_type {reward_type!r} needs act_penalty_lowerbound (e.g. 0.75)")
        if stage is not None and stage not in (0, 1, 2, 3):
            raise ValueError(f"stage must be 0..3 or None, got {stage!r}")
        self.env = ProstheticsEnv(difficulty=1, project=False, time_limit=time_limit, model_path=model_path)
        self.reward_type, self.target_v = reward_type, target_v
        self.act_penalty_lowerbound, self.act_penalty_coeff = act_penalty_lowerbound, act_penalty_coeff
        self.vel_penalty_coeff = vel_penalty_coeff
        self.stage, self.discrete_data, self.discrete_bin = stage, discrete_data, discrete_bin
        self.frame_skip, self.time_limit = frame_skip, time_limit
        self.rng, self.py_rng = np.random.RandomState(seed), random.Random(seed)
        self._seed = seed
        data = np.load(scaler_path)
        self.mean, self.std = data["mean"], data["std"]
        self.keep = np.setdiff1d(np.arange(len(self.mean)), data["duplicate_id"].astype(np.int64))  # 218 -> 183

    # -- targets (CustomR2Env) -----------------------------------------------------------------------
    def _target_vels(self, change_num: int) -> list[float]:
        stage, rng, py = self.stage, self.rng, self.py_rng
        if stage == 1:
            interval = 1.0 / self.discrete_bin
            lo = 0.75 + rng.randint(self.discrete_bin) * interval
            vels = [1.25, py.uniform(lo, lo + interval)]
            for _ in range(change_num - 1):
                vels.append(vels[-1] + py.uniform(-0.5, 0.5))
            return vels
        interval, base, check = {2: (2.0 / self.discrete_bin, 0.25, 2), 3: (3.0 / self.discrete_bin, -0.25, 3)}[stage]
        lo = base + rng.randint(self.discrete_bin) * interval
        while True:
            vels = [1.25]
            for _ in range(change_num):
                vels.append(vels[-1] + py.uniform(-0.5, 0.5))
            if lo <= vels[check] <= lo + interval:
                return vels

    def stage_targets(self, poisson_lambda: int = 300) -> np.ndarray:
        """PARL's ``generate_stage_targets``: float64 ``[time_limit + 1, 3]``."""
        nsteps = self.time_limit + 1
        velocity, heading = np.zeros(nsteps), np.zeros(nsteps)
        velocity[0] = 1.25
        change = np.cumsum(self.rng.poisson(poisson_lambda, 10))
        change = change[:{0: 0, 1: 1, 2: 2, 3: 4 if change[3] <= 1000 else 3}[self.stage]]
        target_vels = self._target_vels(len(change)) if self.discrete_data and self.stage > 0 else None
        count, change = 0, set(change.tolist())
        for i in range(1, nsteps):
            velocity[i], heading[i] = velocity[i - 1], heading[i - 1]
            if i in change:
                count += 1
                if target_vels is not None:
                    velocity[i] = target_vels[count]
                else:
                    velocity[i] += self.py_rng.choice([-1, 1]) * self.py_rng.uniform(-0.5, 0.5)
                heading[i] += self.py_rng.choice([-1, 1]) * self.py_rng.uniform(-math.pi / 8, math.pi / 8)
        return np.stack([velocity * np.cos(heading), np.zeros(nsteps), velocity * np.sin(heading)], axis=1)

    def reset(self) -> np.ndarray:
        if self.reward_type == "FixedTargetSpeed":
            targets = np.zeros((self.time_limit + 1, 3))
            targets[:, 0] = self.target_v
        elif self.stage is not None:
            targets = self.stage_targets()
        else:
            targets = None  # the rules' schedule
        seed = None
        if self._seed is not None:
            seed, self._seed = self._seed, None
        _, info = self.env.reset(seed=seed, options={"targets": targets} if targets is not None else None)
        self.step_count, self.last_target_change_step, self.last_target_vel = 0, 0, None
        self.step_fea = MAXTIME_LIMIT
        self.pre_state_desc = info["state_desc"]
        return self.observation(self.pre_state_desc)

    # -- rewards (RewardShaping subclasses) ------------------------------------------------------
    def shaping_reward(self, d: dict, action01: np.ndarray) -> float:
        pre = self.pre_state_desc
        vx, vz = d["body_vel"]["pelvis"][0], d["body_vel"]["pelvis"][2]
        if self.reward_type == "RunFastest":
            ret = max(d["body_pos"]["tibia_l"][0] - pre["body_pos"]["tibia_l"][0],
                      d["body_pos"]["pros_tibia_r"][0] - pre["body_pos"]["pros_tibia_r"][0])
            lean_x = min(0.3, max(0, d["body_pos"]["pelvis"][0] - d["body_pos"]["head"][0] - 0.15)) * 0.05
            lean_z = min(0.3, max(0, d["body_pos"]["pelvis"][2] - d["body_pos"]["head"][2] - 0.15)) * 0.05
            joint = sum(max(0, k - 0.1) for k in (d["joint_pos"]["knee_r"][-1], d["joint_pos"]["knee_l"][-1])) * 0.03
            return ret - (lean_x + lean_z + joint) * 0.15
        act_penalty = max(self.act_penalty_lowerbound, float(np.linalg.norm(action01)))
        if self.reward_type == "FixedTargetSpeed":
            vel_penalty = (vx - self.target_v) ** 2 + vz ** 2
            return 36 - vel_penalty * self.vel_penalty_coeff - act_penalty * self.act_penalty_coeff
        muscle_penalty = sum(d["muscles"][m]["activation"] ** 2 for m in sorted(d["muscles"])) * 0.001
        vel_penalty = (d["target_vel"][0] - vx) ** 2 + (d["target_vel"][2] - vz) ** 2
        ret = 10 - vel_penalty * self.vel_penalty_coeff
        if not (self.step_count < 60 or self.step_count - self.last_target_change_step < 60):
            ret -= act_penalty * self.act_penalty_coeff
        return ret - muscle_penalty

    def step(self, action: np.ndarray):
        action01 = np.clip((np.asarray(action, np.float64) + 1.0) * 0.5, 0.0, 1.0)  # ActionScale
        shaping = r2 = 0.0
        done = target_changed = timeout = False
        frames = 0
        for _ in range(self.frame_skip):  # FrameSkip
            self.step_count += 1
            frames += 1
            _, r, terminated, truncated, info = self.env.step(action01)
            d = info["state_desc"]
            # the shaping sees the excitations in [0, 1]: PARL's ActionScale wraps FrameSkip, which wraps it
            shaping += self.shaping_reward(d, action01)
            r2 += r
            changed = self.last_target_vel is not None and np.any(
                np.abs(np.array(self.last_target_vel) - np.array(d["target_vel"])) >= 1e-5)
            if changed:
                self.last_target_change_step = self.step_count
            self.last_target_vel = d["target_vel"]
            self.pre_state_desc = d
            done = terminated or truncated
            timeout = self.step_count >= MAXTIME_LIMIT or truncated
            if changed:
                target_changed = True
                self.step_fea = MAXTIME_LIMIT
                break
            if done:
                break
        self.step_fea -= self.frame_skip
        return self.observation(d), shaping, r2, done, {"target_changed": target_changed, "timeout": timeout,
                                                        "frames": frames}

    # -- observation (PelvisBasedObs) ------------------------------------------------------------
    def observation(self, d: dict) -> np.ndarray:
        o: OrderedDict[str, float] = OrderedDict()
        for b in BODIES:
            for i, ax in enumerate(("_x", "_y", "_z")):
                o[b + ax] = d["body_pos"][b][i]
            for i, ax in enumerate(("_v_x", "_v_y", "_v_z")):
                o[b + ax] = d["body_vel"][b][i]
            for i, ax in enumerate(("_x_r", "_y_r", "_z_r")):
                o[b + ax] = d["body_pos_rot"][b][i]
            for i, ax in enumerate(("_v_x_r", "_v_y_r", "_v_z_r")):
                o[b + ax] = d["body_vel_rot"][b][i]
        for joint in ["hip_r", "knee_r", "ankle_r", "hip_l", "knee_l", "ankle_l", "back"]:
            if "hip" not in joint:
                o[joint + "_joint_pos"] = d["joint_pos"][joint][0]
                o[joint + "_joint_vel"] = d["joint_vel"][joint][0]
            else:
                for i in range(3):
                    o[f"{joint}_joint_pos_{i}"] = d["joint_pos"][joint][i]
                    o[f"{joint}_joint_vel_{i}"] = d["joint_vel"][joint][i]
        for m in sorted(d["muscles"]):
            for key in ("activation", "fiber_length", "fiber_velocity"):
                o[f"{m}_{key}_0"] = d["muscles"][m][key]
        for i, ax in enumerate(("_x", "_y", "_z")):
            o["mass" + ax] = d["misc"]["mass_center_pos"][i]
        for i, ax in enumerate(("_v_x", "_v_y", "_v_z")):
            o["mass" + ax] = d["misc"]["mass_center_vel"][i]
        for key in ["talus_l_y", "toes_l_y"]:
            o["touch_indicator_" + key] = np.clip(0.05 - o[key] * 10 + 0.5, 0.0, 1.0)
            o["touch_indicator_2_" + key] = np.clip(0.1 - o[key] * 10 + 0.5, 0.0, 1.0)
        core = _core_matrix(o["pelvis_y_r"])
        pelvis_pos = np.array([o["pelvis_x"], o["pelvis_y"], o["pelvis_z"]]).reshape(3, 1)
        pelvis_vel = np.array([o["pelvis_v_x"], o["pelvis_v_y"], o["pelvis_v_z"]]).reshape(3, 1)
        w = o["pelvis_v_y_r"]
        for b in ["mass"] + BODIES[1:]:
            if b != "mass":
                o[b + "_y_r"] -= o["pelvis_y_r"]
                o[b + "_v_y_r"] -= o["pelvis_v_y_r"]
            gpos = np.array([o[b + ax] for ax in ("_x", "_y", "_z")]).reshape(3, 1)
            gvel = np.array([o[b + "_v" + ax] for ax in ("_x", "_y", "_z")]).reshape(3, 1)
            rel_pos = core.dot(gpos - pelvis_pos)
            # PARL's line ``core.dot(v) + np.array([-w * z, 0, w * x])`` built a ragged object array on the NumPy
            # of 2018 and broadcast to [3, 3]; its column 0 (read below) adds -w * z to every axis. Kept as PARL
            # computed it (its observation scaler was fitted on these values).
            rel_vel = core.dot(gvel - pelvis_vel) - w * rel_pos[2][0]
            for i, ax in enumerate(("_x", "_y", "_z")):
                o[b + ax] = rel_pos[i][0]
                o[b + "_v" + ax] = rel_vel[i][0]
        for key in ["pelvis_x", "pelvis_z", "pelvis_y_r"]:
            del o[key]
        current_v = core.dot(np.array(d["body_vel"]["pelvis"]).reshape(3, 1))
        o["pelvis_v_x"], o["pelvis_v_z"] = current_v[0][0], current_v[2][0]
        res = np.array(list(o.values()), dtype=np.float64)
        n = len(self.mean)
        res[:n] = (res[:n] - self.mean) / self.std
        res = res[self.keep]
        feet_dis = ((o["tibia_l_x"] - o["pros_tibia_r_x"]) ** 2 + (o["tibia_l_z"] - o["pros_tibia_r_z"]) ** 2) ** 0.5
        remaining_time = -(self.step_fea - MAXTIME_LIMIT / 2.0) / (MAXTIME_LIMIT / 2.0)
        target_v = core.dot(np.array(d["target_vel"]).reshape(3, 1))
        diff_x, diff_z = target_v[0][0] - current_v[0][0], target_v[2][0] - current_v[2][0]
        diff_v = math.hypot(target_v[0][0], target_v[2][0]) - math.hypot(current_v[0][0], current_v[2][0])
        tx, tz = d["target_vel"][0], d["target_vel"][2]
        diff_theta = math.atan(-1.0 * tz / tx) - d["body_pos_rot"]["pelvis"][1]
        return np.concatenate([res, [feet_dis, remaining_time, diff_x / 3.0, diff_z / 3.0, diff_v / 3.0,
                                     diff_theta / (np.pi * 3 / 8)]]).astype(np.float32)
