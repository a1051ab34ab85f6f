"""examples/neurips2018_prosthetics: the 2018 ProstheticsEnv on OpenSim 4.6 against the 2018 rules (osim-rl 2.1.5),
PARL's training observation, the multi-head DDPG ensemble, a missing opensim, and a tiny run with 2 remote actors."""

import importlib.util
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "neurips2018_prosthetics"
TRAIN = EXAMPLE / "train.py"
HAS_OPENSIM = importlib.util.find_spec("opensim") is not None
# the integration nox session installs opensim (INTEGRATION_DEPS): these skip only where it is absent
needs_opensim = pytest.mark.skipif(not HAS_OPENSIM, reason="needs opensim (pip install 'opensim>=4.6')")


@pytest.fixture(scope="module")
def example(request):
    sys.path.insert(0, str(EXAMPLE))
    request.addfinalizer(lambda: sys.path.remove(str(EXAMPLE)))
    import env_wrapper
    import prosthetics_env

    return prosthetics_env, env_wrapper


@pytest.fixture(scope="module")
def round2(example):
    env = example[0].ProstheticsEnv(difficulty=1)
    yield env
    env.close()


@needs_opensim
def test_round2_env_matches_the_2018_rules(example, round2):
    env = round2
    assert env.action_space.shape == (19,) and env.observation_space.shape == (160,)  # the 2018 sizes
    assert env.time_limit == 1000
    obs, info = env.reset(seed=7)
    d = info["state_desc"]
    assert obs.shape == (160,) and np.all(np.isfinite(obs))
    assert {"joint_pos", "joint_vel", "joint_acc", "body_pos", "body_vel", "body_acc", "body_pos_rot", "body_vel_rot",
            "body_acc_rot", "forces", "muscles", "markers", "misc", "target_vel"} == set(d)
    assert len(d["muscles"]) == 19 and "pros_foot_r" in d["body_pos"] and "tibia_l" in d["body_pos"]
    assert d["body_pos"]["pelvis"] == pytest.approx([0.0, 0.94, 0.0])  # the model's standing pelvis
    assert d["target_vel"] == [1.25, 0.0, 0.0]
    # the schedule: changes at cumsum(Poisson(300, 10)) with |d speed| <= 0.5 and |d heading| <= pi/8
    changes = np.cumsum(np.random.RandomState(7).poisson(300, 10))
    targets = env.targets
    assert targets.shape == (1001, 3) and np.all(targets[:, 1] == 0)
    moved = np.nonzero(np.any(np.diff(targets, axis=0) != 0, axis=1))[0] + 1
    assert moved.tolist() == [c for c in changes.tolist() if c <= 1000] and len(moved) >= 2
    speed, heading = np.hypot(targets[:, 0], targets[:, 2]), np.arctan2(targets[:, 2], targets[:, 0])
    assert np.all(np.abs(np.diff(speed)) <= 0.5 + 1e-9) and np.all(np.abs(np.diff(heading)) <= math.pi / 8 + 1e-9)
    # the round-2 reward: 10 - (vx - tx)^2 - (vz - tz)^2 - 0.001 * sum(activation^2)
    for _ in range(3):
        _, reward, terminated, truncated, info = env.step(np.full(19, 0.3))
    d = info["state_desc"]
    act = np.array([d["muscles"][m]["activation"] for m in d["muscles"]])
    expected = (10 - (d["body_vel"]["pelvis"][0] - d["target_vel"][0]) ** 2
                - (d["body_vel"]["pelvis"][2] - d["target_vel"][2]) ** 2 - 0.001 * np.sum(act ** 2))
    assert reward == pytest.approx(expected) and 8 < reward < 10
    assert not terminated and not truncated and env.istep == 3
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.full(19, np.nan))


@needs_opensim
def test_controls_drive_their_own_muscle_and_a_fall_terminates(round2):
    env = round2
    for j in (0, 18):  # OpenSim 4.6 names no control function: the order must map action j to muscle j
        env.reset(seed=0)
        action = np.zeros(19)
        action[j] = 1.0
        for _ in range(3):
            env.step(action)
        assert int(np.argmax(env.osim_model.get_activations())) == j
    env.reset(seed=0)  # drop the pelvis below 0.6 m: the episode terminates on the next step
    model = env.osim_model
    model.model.getCoordinateSet().get("pelvis_ty").setValue(model.state, 0.55)
    model.manager.initialize(model.state)
    _, _, terminated, truncated, _ = env.step(np.zeros(19))
    assert terminated and not truncated


@needs_opensim
def test_round1_reward_limit_and_truncation(example):
    env = example[0].ProstheticsEnv(difficulty=0, project=False)
    assert env.time_limit == 300
    obs, _ = env.reset(seed=0)
    assert "target_vel" not in obs
    _, reward, _, _, info = env.step(np.zeros(19))
    assert reward == pytest.approx(9.0 - (info["state_desc"]["body_vel"]["pelvis"][0] - 3.0) ** 2)
    short = example[0].ProstheticsEnv(difficulty=1, time_limit=2)
    short.reset(seed=0)
    assert short.step(np.zeros(19))[3] is False and short.step(np.zeros(19))[3] is True  # truncated at the limit


@needs_opensim
def test_parl_training_env_observation_and_stage_targets(example):
    training = example[1].TrainingEnv("Round2", act_penalty_lowerbound=0.75, act_penalty_coeff=7.0,
                                      vel_penalty_coeff=20.0, stage=3, discrete_data=True, seed=3)
    obs = training.reset()
    assert obs.shape == (189,) and obs.dtype == np.float32 and np.all(np.isfinite(obs))
    assert np.abs(obs[:183]).max() < 10  # PARL's scaler fits this model's standing pose
    targets = training.env.targets
    speeds = np.hypot(targets[:, 0], targets[:, 2])
    assert speeds[0] == 1.25 and 3 <= len(np.unique(np.round(speeds, 9))) <= 5  # stage 3: 3 or 4 changes
    obs, shaping, r2, done, info = training.step(np.zeros(19))
    assert info["frames"] == 4 and not done and obs.shape == (189,)
    with pytest.raises(ValueError, match="target_v"):
        example[1].TrainingEnv("FixedTargetSpeed", act_penalty_lowerbound=1.0)


@pytest.fixture(scope="module")
def train_module(example):
    spec = importlib.util.spec_from_file_location("prosthetics_train", TRAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ensemble_predict_and_restore_from_one_head(train_module):
    import torch

    torch.manual_seed(0)
    alg = train_module.MultiHeadDDPG(train_module.EnsembleModel(3), device="cpu")
    obs = torch.randn(1, train_module.OBS_DIM)
    with torch.no_grad():
        action = alg.ensemble_predict(obs)
        heads = torch.cat([alg.predict(obs, head=i) for i in range(3)])
        scores = torch.stack([h.value(obs.expand(3, -1), heads) for h in alg.model.heads], 1)
        best = (scores / scores.sum(0, keepdim=True)).mean(1).argmax()
    assert action.shape == (1, 19) and torch.equal(action[0], heads[best])
    # the heads share their bottom layers (PARL's *_shared parameters), not their tops
    assert alg.model.heads[0].actor_bottom is alg.model.heads[2].actor_bottom
    assert not torch.equal(alg.model.heads[0].actor_top.fc3.weight, alg.model.heads[1].actor_top.fc3.weight)
    one = train_module.MultiHeadDDPG(train_module.EnsembleModel(1), device="cpu")
    alg.load_state_dict(one.state_dict(), from_one_head=True)
    with torch.no_grad():
        assert all(torch.allclose(alg.predict(obs, head=i), one.predict(obs)) for i in range(3))
    with pytest.raises(ValueError, match="--restore-from-one-head"):
        alg.load_state_dict(one.state_dict())


def test_missing_opensim_names_the_fix(train_module, monkeypatch, capsys):
    code = ("import sys; sys.modules['opensim'] = None; "  # as if opensim were not installed
            f"sys.path.insert(0, {str(EXAMPLE)!r}); import prosthetics_env\n"
            "try:\n    prosthetics_env.ProstheticsEnv()\nexcept prosthetics_env.OpenSimMissingError as e:\n"
            "    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ERR" in out.stdout and "pip install 'opensim>=4.6'" in out.stdout
    # train.py stops before starting anything, with the same message
    monkeypatch.setitem(sys.modules, "opensim", None)
    with pytest.raises(SystemExit, match=r"pip install 'opensim>=4\.6'"):
        train_module.main(["--logdir", "unused"])


def test_bad_arguments_are_named(train_module, capsys):
    for argv, message in ((["--reward-type", "FixedTargetSpeed"], "needs --target-v"),
                          (["--reward-type", "Round2"], "needs --act-penalty-lowerbound"),
                          (["--actors", "0"], "--actors must be >= 1"), (["--stage", "4"], "--stage must be")):
        with pytest.raises(SystemExit) as exc:
            train_module.parse_args(argv)
        assert exc.value.code == 2 and message in capsys.readouterr().err


@needs_opensim
def test_tiny_run_with_two_remote_simulators(tmp_path):
    logdir, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    out = subprocess.run([sys.executable, str(TRAIN), "--actors", "2", "--time-limit", "12", "--total-steps", "20",
                          "--warm-start-batches", "0", "--train-times", "2", "--eval-every", "1000000",
                          "--seed", "1", "--device", "cpu", "--logdir", str(logdir), "--no-progress"],
                         capture_output=True, text=True, timeout=240, cwd=ROOT,
                         env={**os.environ, "PARL_BACKEND": "torch", "PYTHONHASHSEED": "0", "TMPDIR": str(tmpdir)})
    assert out.returncode == 0, f"train.py failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary["actors"] == 2 and summary["seed"] == 1 and summary["device"] == "cpu"
    assert summary["env_steps"] >= 20 and summary["episodes"] >= 2 and summary["updates"] >= 2
    assert summary["restored_matches"] is True and (logdir / "agent.ckpt").is_file()
    # 12 frames of the rules' round 2 without a fall: between 0 and 10 points a frame
    assert summary["eval_frames_mean"] == 12 and 0 < summary["eval_return_mean"] <= 120
    rows = (logdir / "curve.csv").read_text().splitlines()
    assert rows[0].startswith("env_steps,wall_s,cpu_s,eval_return_mean") and len(rows) == 2
    assert list(logdir.glob("events.out.tfevents.*"))
    # the simulators wrote the shipped model and scaler to temporary folders and removed them (jobs end with
    # os._exit: a folder left for a finalizer would stay)
    assert not list(tmpdir.glob("prosthetics-*"))


@needs_opensim
def test_sigterm_stops_like_ctrl_c_and_still_writes_the_summary(tmp_path):
    """A scheduler's stop (``timeout``, SLURM, ``kill``) sends SIGTERM: the run still evaluates and writes."""
    logdir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(TRAIN), "--actors", "1", "--time-limit", "12",
                             "--total-steps", "100000000", "--warm-start-batches", "0", "--train-times", "1",
                             "--eval-every", "1000000000", "--seed", "2", "--device", "cpu", "--logdir", str(logdir),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PARL_BACKEND": "torch", "PYTHONHASHSEED": "0"})
    episodes = logdir / "episodes.csv"
    deadline = time.monotonic() + 240
    try:
        # training is under way once a training episode is on disk (the header is the first line)
        while not (episodes.is_file() and len(episodes.read_text().splitlines()) >= 2):
            assert proc.poll() is None, f"train.py ended early:\n{proc.communicate()[1][-3000:]}"
            assert time.monotonic() < deadline, "no training episode within 240 s"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, f"train.py failed after SIGTERM:\n{stdout[-2000:]}\n{stderr[-3000:]}"
    summary = json.loads((logdir / "summary.json").read_text())
    assert summary == json.loads(stdout.strip().splitlines()[-1])
    assert summary["interrupted"] is True and summary["episodes"] >= 1
    assert summary["eval_frames_mean"] == 12 and summary["restored_matches"] is True
    assert len((logdir / "curve.csv").read_text().splitlines()) == 2  # the evaluation at the stop
