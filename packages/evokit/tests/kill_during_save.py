"""Kill ``ESAgent.save_inference_model`` at random moments: ``python kill_during_save.py FOLDER KILLS SEED``.

The process saves a ``NumpyMLP`` five times (measuring a save), then for each kill forks a child that fills
every weight with the next counter value ``k``, writes one byte to a pipe and saves; the parent reads the byte,
sleeps a random time in ``[0, 3 * save time]``, ``SIGKILL``\\ s the child and loads ``model.npz`` with
``load_backend_from_file``. Each load must succeed (else ``unloadable``) with one value in every weight (else
``torn``), the last loaded one (``old``) or ``k`` (``new``); a save that returned must load as ``k`` (else
``lost``). The last stdout line is a JSON report.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import statistics
import sys
import time

import numpy as np

from evokit import ESAgent, NumpyMLP
from evokit.models import load_backend_from_file


def _set(agent: ESAgent, k: int) -> None:
    agent._backend.set_flat(np.full(agent.num_params, k, dtype=np.float32))


def _read_byte(fd: int, deadline: float) -> bytes:
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            return os.read(fd, 1)
    return b""


def run(folder: str, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    agent = ESAgent(NumpyMLP([64, 256, 256, 8]))
    path = os.path.join(folder, "model.npz")
    times = []
    for k in range(1, 6):
        _set(agent, k)
        start = time.perf_counter()
        agent.save_inference_model(folder)
        times.append(time.perf_counter() - start)
    save_time = statistics.median(times)
    committed = k = 5
    report = {"kills": 0, "unloadable": 0, "torn": 0, "old": 0, "new": 0, "other": 0, "lost": 0,
              "finished_before_kill": 0, "debris_max": 0, "save_time_s": save_time, "errors": []}
    for _ in range(kills):
        k += 1
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _set(agent, k)
            os.write(write_end, b"s")
            agent.save_inference_model(folder)
            os.write(write_end, b"d")
            time.sleep(600)
            os._exit(0)
        os.close(write_end)
        if _read_byte(read_end, time.monotonic() + 60) != b"s":
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise RuntimeError("the saving child did not start within 60 s")
        time.sleep(rng.uniform(0, 3 * save_time))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        finished = _read_byte(read_end, time.monotonic() + 1) == b"d"
        os.close(read_end)
        report["kills"] += 1
        report["finished_before_kill"] += finished
        report["debris_max"] = max(report["debris_max"], sum(n.endswith(".tmp") for n in os.listdir(folder)))
        try:
            values = set(np.unique(load_backend_from_file(path).get_flat()).tolist())
        except Exception as exc:  # counted and reported
            report["unloadable"] += 1
            report["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        if len(values) != 1:
            report["torn"] += 1
            continue
        value = int(values.pop())
        if value == k:
            report["new"] += 1
        elif value == committed:
            report["old"] += 1
            report["lost"] += finished
        else:
            report["other"] += 1
        committed = value
    _set(agent, k + 1)
    agent.save_inference_model(folder)
    report["final_ok"] = (set(np.unique(load_backend_from_file(path).get_flat()).tolist()) == {k + 1}
                          and not any(n.endswith(".tmp") for n in os.listdir(folder)))
    return report


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))), flush=True)
