"""benchmarks/atari/run_curve.py: the record of a learning-curve command (load, CPU seconds of its process tree)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "atari" / "run_curve.py"

# a parent that burns CPU in a child process and in itself, then exits with 3
BURN = ("import subprocess, sys, time\n"
        "code = 'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.5: pass'\n"
        "child = subprocess.Popen([sys.executable, '-c', code])\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.5: pass\n"
        "child.wait()\n"
        "sys.exit(3)\n")


def test_run_curve_records_the_tree_cpu_load_and_exit_code(tmp_path):
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--poll-s", "0.1", "--",
                           sys.executable, "-c", BURN], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    record = json.loads(out.read_text())
    assert record["returncode"] == 3 and record["wall_s"] > 0
    assert record["cpu_s"] >= 0.6, record  # both processes burn 0.5 s; each read at most one poll (0.1 s) early
    assert len(record["cpu_s_by_name"]) == 2
    assert record["loadavg_1m"]["samples"] >= 2 and record["loadavg_1m"]["min"] <= record["loadavg_1m"]["max"]
    # no path of this machine in the record: the interpreter by its name, or relative to the tree (a nox venv)
    assert record["command"][0].endswith(Path(sys.executable).name)
    assert not any(os.path.isabs(arg) for arg in record["command"])
    assert record["machine"]["cpus"] == os.cpu_count()


def test_run_curve_needs_a_command(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "x.json")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "give the command to run after --" in proc.stderr


def test_run_curve_passes_sigint_on_even_when_started_with_sigint_ignored(tmp_path):
    """Started in the background by a shell (SIGINT ignored), a SIGINT to the wrapper still reaches the command as a
    KeyboardInterrupt, and the record is written."""
    import signal
    import time

    ready = tmp_path / "ready"
    code = (f"import pathlib, time\npathlib.Path({str(ready)!r}).touch()\n"
            "try:\n    time.sleep(120)\nexcept KeyboardInterrupt:\n    raise SystemExit(7)\n")
    out = tmp_path / "run.json"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--out", str(out), "--poll-s", "0.1", "--",
                             sys.executable, "-c", code],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # the wrapper's handler passes it on
        assert proc.wait(timeout=60) == 7  # the command saw a KeyboardInterrupt
    finally:
        if proc.poll() is None:
            proc.kill()
    assert json.loads(out.read_text())["returncode"] == 7
