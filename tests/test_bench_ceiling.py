"""benchmarks/atari/bench_ceiling.py: EnvPool alone on random actions, and a run's steps/s as a fraction of it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "atari" / "bench_ceiling.py"


def test_ceiling_and_fraction(tmp_path):
    pytest.importorskip("envpool")
    pytest.importorskip("ale_py")
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"env_steps": 1000, "wall_s": 4.0}))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--envs", "2", "--threads", "1", "--window-s", "0.5",
                           "--rounds", "2", "--against", str(summary)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    rounds = [line["agent_steps_per_s"] for line in lines if "round" in line]
    final = lines[-1]
    assert len(rounds) == 2 and all(rate > 0 for rate in rounds)
    assert final["ceiling_frames_per_s"] == pytest.approx(4 * final["ceiling_agent_steps_per_s"], rel=1e-3)
    assert final["run_agent_steps_per_s"] == 250.0
    assert final["fraction_of_ceiling"] == pytest.approx(250.0 / final["ceiling_agent_steps_per_s"], rel=1e-2)


def test_against_a_missing_summary_names_it(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1", "--window-s", "0.1", "--envs", "1",
                           "--against", str(tmp_path / "nope.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "nope.json" in proc.stderr and "give the summary.json" in proc.stderr
