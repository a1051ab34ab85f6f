"""Kill saves at random moments and check what loads: ``python checkpoint_kill.py KIND FOLDER KILLS SEED``.

KIND is ``torch`` / ``paddle`` (``Agent.save``) or ``memory`` (``ReplayMemory.save``). The process saves
five times (measuring a save), then for each kill forks a child that fills the subject with the next
counter value ``k`` (weights, target network, Adam moments and a step counter of an agent; every stored
array of a memory), writes one byte to a pipe and saves; the parent reads the byte, sleeps a random time in
``[0, 1.5 * save time]``, ``SIGKILL``\\ s the child and loads the checkpoint into a fresh subject. Each load
must succeed (else ``unloadable``), hold one counter value everywhere (else ``torn``), and that value must
be the last committed one (``old``) or ``k`` (``new``); a save that returned before the kill must load as
``k`` (else ``lost``). For agents the model file alone (as PARL code loads it) must hold one value
everywhere, the one it held before this save or ``k`` (else ``main_file_bad``). Temporary files left by
kills are counted (``debris_max``: the most seen at once) and must be gone after one final save, which must
load. The last stdout line is a JSON report.
"""

from __future__ import annotations

import copy
import json
import os
import random
import select
import signal
import statistics
import sys
import time

import numpy as np


def _agent_subject(name: str):
    if name == "torch":
        import torch

        torch.set_num_threads(1)
        import parl_core.torch as core

        Linear, adam = torch.nn.Linear, lambda params: torch.optim.Adam(params, lr=1e-3)

        def tensors_of_optimizer(opt):
            return [v for st in opt.state.values() for v in st.values() if isinstance(v, torch.Tensor)]

        def fill(t, k):
            with torch.no_grad():
                t.fill_(float(k))

        def step(alg):
            loss = (alg.model(torch.ones(2, 3)) ** 2).sum() + (alg.target_model(torch.ones(2, 3)) ** 2).sum()
            alg.optimizer.zero_grad()
            loss.backward()
            alg.optimizer.step()

        def main_alone(path):
            return torch.load(path, weights_only=True)

        numpy = lambda t: t.detach().cpu().numpy()  # noqa: E731
    else:
        import paddle

        paddle.set_device("cpu")
        import parl_core.paddle as core

        Linear = paddle.nn.Linear

        def adam(params):
            return paddle.optimizer.Adam(parameters=params, learning_rate=1e-3)

        def tensors_of_optimizer(opt):
            return [v for v in opt.state_dict().values() if isinstance(v, paddle.Tensor)]

        def fill(t, k):
            t.set_value(np.full(t.shape, k, dtype=t.numpy().dtype))

        def step(alg):
            loss = (alg.model(paddle.ones([2, 3])) ** 2).sum() + (alg.target_model(paddle.ones([2, 3])) ** 2).sum()
            loss.backward()
            alg.optimizer.step()
            alg.optimizer.clear_grad()

        def main_alone(path):
            return paddle.load(path)

        numpy = lambda t: t.numpy()  # noqa: E731

    class Net(core.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = Linear(3, 8)
            self.fc2 = Linear(8, 2)

        def forward(self, x):
            return self.fc2(self.fc1(x))

    class Alg(core.Algorithm):
        checkpoint_attrs = ("counter",)

        def __init__(self, model):
            super().__init__(model)
            self.target_model = copy.deepcopy(model)
            self.optimizer = adam(list(self.model.parameters()) + list(self.target_model.parameters()))
            self.counter = 0

    class Subject:
        filename = "model.ckpt"

        @staticmethod
        def make():
            alg = Alg(Net())
            step(alg)  # creates the Adam moments
            return core.Agent(alg)

        @staticmethod
        def set(agent, k):
            for model in (agent.alg.model, agent.alg.target_model):
                for t in model.parameters():
                    fill(t, k)
            for t in tensors_of_optimizer(agent.alg.optimizer):
                fill(t, k)
            agent.alg.counter = k

        @staticmethod
        def save(agent, path):
            agent.save(path)

        @classmethod
        def load(cls, path):
            agent = cls.make()
            agent.restore(path)
            return agent

        @staticmethod
        def values(agent):
            arrays = [w for m in (agent.alg.model, agent.alg.target_model) for w in m.get_weights().values()]
            arrays += [numpy(t) for t in tensors_of_optimizer(agent.alg.optimizer)]
            found = {float(v) for a in arrays for v in np.unique(a)}
            found.add(float(agent.alg.counter))
            return found

        @staticmethod
        def main_values(path):
            return {float(v) for t in main_alone(path).values() for v in np.unique(np.asarray(numpy(t)))}

    return Subject


def _memory_subject():
    from parl_core.utils import ReplayMemory

    class Subject:
        filename = "memory.npz"
        main_values = None

        @staticmethod
        def make():
            return ReplayMemory(4000, 64, 2, seed=0)

        @staticmethod
        def set(rpm, k):
            n = 100 + k % 50  # the size tells k too
            for array in (rpm.obs, rpm.next_obs, rpm.action, rpm.reward):
                array[:] = k
            rpm._curr_size, rpm._curr_pos = n, n

        @staticmethod
        def save(rpm, path):
            rpm.save(path)

        @classmethod
        def load(cls, path):
            rpm = cls.make()
            rpm.load(path)
            return rpm

        @staticmethod
        def values(rpm):
            n = rpm.size()
            found = {float(v) for a in (rpm.obs, rpm.next_obs, rpm.action, rpm.reward) for v in np.unique(a[:n])}
            if len(found) == 1 and n != 100 + int(next(iter(found))) % 50:
                found.add(-1.0)  # the size belongs to another save
            return found

    return Subject


def _read_byte(fd: int, deadline: float) -> bytes:
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            return os.read(fd, 1)
    return b""


def _debris(folder: str) -> int:
    return sum(1 for name in os.listdir(folder) if name.endswith(".tmp") or name.endswith(".partial"))


def run(kind: str, folder: str, kills: int, seed: int) -> dict:
    subject = _memory_subject() if kind == "memory" else _agent_subject(kind)
    rng = random.Random(seed)
    path = os.path.join(folder, subject.filename)
    obj = subject.make()
    times = []
    for k in range(1, 6):
        subject.set(obj, k)
        start = time.perf_counter()
        subject.save(obj, path)
        times.append(time.perf_counter() - start)
    save_time = statistics.median(times)
    committed = main_seen = k = 5
    report = {"kind": kind, "kills": 0, "unloadable": 0, "torn": 0, "old": 0, "new": 0, "other": 0, "lost": 0,
              "main_file_bad": 0, "finished_before_kill": 0, "debris_max": 0, "save_time_s": save_time,
              "errors": []}
    for _ in range(kills):
        k += 1
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the saving child: killed during (or just after) its save
            os.close(read_end)
            subject.set(obj, k)
            os.write(write_end, b"s")
            subject.save(obj, path)
            os.write(write_end, b"d")
            time.sleep(600)
            os._exit(0)
        os.close(write_end)
        if _read_byte(read_end, time.monotonic() + 60) != b"s":
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise RuntimeError("the saving child did not start within 60 s")
        time.sleep(rng.uniform(0, 1.5 * save_time))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        finished = _read_byte(read_end, time.monotonic() + 1) == b"d"
        os.close(read_end)
        report["kills"] += 1
        report["finished_before_kill"] += finished
        report["debris_max"] = max(report["debris_max"], _debris(folder))
        try:
            loaded = subject.load(path)
        except Exception as exc:  # counted and reported, never raised: the report says what failed
            report["unloadable"] += 1
            report["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
            continue
        values = subject.values(loaded)
        if len(values) != 1:
            report["torn"] += 1
            report["errors"].append(f"torn after save {k}: {sorted(values)[:6]}")
            continue
        (value,) = values
        if value == k:
            report["new"] += 1
        elif value == committed:
            report["old"] += 1
            if finished:
                report["lost"] += 1
        else:
            report["other"] += 1
        if subject.main_values is not None:
            main = subject.main_values(path)  # a save killed after its commit may leave the model file one behind
            if not (main == {float(main_seen)} or main == {float(k)}):
                report["main_file_bad"] += 1
                report["errors"].append(f"model file after save {k} (was {main_seen}): {sorted(main)[:6]}")
            else:
                main_seen = int(next(iter(main)))
        committed = int(value)
    subject.set(obj, k + 1)
    subject.save(obj, path)
    report["final_ok"] = subject.values(subject.load(path)) == {float(k + 1)} and _debris(folder) == 0
    return report


if __name__ == "__main__":
    kind_, folder_, kills_, seed_ = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(run(kind_, folder_, kills_, seed_)), flush=True)
