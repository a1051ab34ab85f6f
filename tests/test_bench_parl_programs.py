"""``benchmarks/algorithms/bench_parl_programs.py`` (the whole-program P1 benchmark): its argument checks, its
dry run, and one tiny child run on this project (the PARL 2.2.1 venv is not needed)."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "algorithms" / "bench_parl_programs.py"


def load():
    spec = importlib.util.spec_from_file_location("bench_parl_programs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_peer_sides_need_the_parl_python_named_in_the_message():
    bench = load()
    with pytest.raises(SystemExit, match="--parl-python"):
        bench.main(["--sides", "parl221", "--dry-run"])
    with pytest.raises(SystemExit):
        bench.main(["--sides", "ours331", "--seeds", "-1", "--dry-run"])


def test_dry_run_alternates_the_sides_and_runs_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_TMP", str(tmp_path))
    load().main(["--parl-python", "/nowhere/python", "--programs", "dqn", "--seeds", "0", "1", "--dry-run"])
    lines = capsys.readouterr().out.splitlines()
    sides = [json.loads(line.split("'")[1])["side"] for line in lines]
    assert sides == ["parl221", "ours331", "ours262", "ours262", "ours331", "parl221"]
    assert all(line.startswith("would run: /nowhere/python") == (side != "ours331")
               for line, side in zip(lines, sides, strict=True))
    assert list(tmp_path.iterdir()) == []  # its scratch copies are removed


def test_a_child_run_counts_env_steps_of_the_unchanged_program(tmp_path):
    pytest.importorskip("paddle")
    bench = load()
    work = tmp_path / "QuickStart"
    import shutil

    shutil.copytree(bench.VENDORED / "QuickStart", work)
    spec = {"program": "quickstart", "side": "ours331", "seed": 0, "work": str(work), "threshold": 195.0,
            "args": {"max_episodes": 3}}
    env = bench._side_env("ours331")
    out = subprocess.run([sys.executable, str(SCRIPT), "--child", json.dumps(spec)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["train_episodes"] == 3 and result["train_steps"] >= 3 * 8  # CartPole lasts >= 8 steps
    assert result["eval_steps"] == 0 and result["reached"] is False and result["parl"].startswith(str(ROOT))
    assert result["wall_s"] > 0 and result["ms_per_step"] > 0
    assert os.path.exists(work / "model.ckpt")  # the program ran to its end (its agent.save)
