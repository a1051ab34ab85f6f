"""The shell commands of the site's pages (READMEs included as the site shows them) and of the root README run.

One test per page: the page's commands run in the page's order, as subprocesses, in one temporary directory that
holds copies of ``examples`` and ``benchmarks``, so that the pages' relative paths work, everything the commands write
(``runs/...``, a script's output beside itself) stays in that directory, and a ``--restore runs/.../x.ckpt`` finds
what the page's earlier command wrote (a page whose restore path is not what its training command writes fails).

What a run changes, and nothing else:

- tiny budgets: ``TINY`` maps each script to flags appended to the page's command (argparse: the last occurrence
  wins), so that each command takes seconds; a budget the page already sets lower (``--total-steps 0``) is kept;
- sizes: a page's ``--actors`` / ``--actor_num`` above 2 run with 2 and ``--cpu-num`` above 4 with 4 (``CAPS``: the CI
  machine has 2 cores; 15 actors run the same code as 2, and the cluster tests of parl-remote measure the counts);
- placeholders: ``[--double]`` runs with the flag; ``runs/.../model.ckpt`` is the file of that name the page's
  earlier commands wrote; the port ``8010`` is a free port (the page's own ``xparl start`` runs on it; a page that
  names a cluster without starting one gets one started for it), and the example hosts (``HOST``, ``10.0.0.1``)
  are this machine; ``token.txt`` and ``$XPARL_TOKEN`` are that cluster's token; every cluster a page started is
  stopped (``xparl stop``) at its end, in a state directory (``XPARL_HOME``) of its own;
- servers (``python -m parl_monitor``) start, must answer HTTP within a deadline, and are stopped.

Commands that cannot run here are listed in ``NOT_RUN`` with the reason; a test keeps that table honest (every
entry still matches a command of some page, and the commands run are the large majority). Lines of shell blocks
that are no command (output, configuration) are told apart by their first word (``PROGRAMS``).
"""

from __future__ import annotations

import dataclasses
import glob
import itertools
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from blocks import ROOT, SHELL_LANGS, all_blocks, free_port, shell_commands

# One command's limit: each takes seconds on an idle 2-core machine (a loaded one may raise it: PARL_DOCS_TIMEOUT_S)
TIMEOUT_S = float(os.environ.get("PARL_DOCS_TIMEOUT_S", "240"))
pytestmark = pytest.mark.timeout(max(900, 6 * TIMEOUT_S))  # one page
COPIED = ("examples", "benchmarks")  # what the commands run and read, by relative paths (3 MB)
# The first word of a command (after a prompt and VAR=value prefixes); other lines of shell blocks are output.
PROGRAMS = re.compile(r"^(python3?|xparl|pip|nox|docker|kubectl|tensorboard|cd|\.|nice|\S*/(python|pip))$")

# Commands that do not run in the docs session: {regular expression matched against the command: reason}.
NOT_RUN = {
    r"^(python3 -m )?pip install|^\.venv/bin/pip install|^python3 -m venv|^\. \.venv/bin/activate":
        "installs packages: the docs nox session installs what the run commands need (noxfile.py DOCS_DEPS)",
    r"^python3 -m nox": "runs the nox sessions themselves (CI runs them)",
    r"^docker |^kubectl ": "needs Docker and a Kubernetes cluster with the KubeRay operator",
    r"ray://": "needs a Ray cluster (the ray nox session runs the examples on a local Ray cluster: "
               "tests/test_examples_on_ray.py)",
    r"^tensorboard ": "TensorBoard's own server; the examples' tests read the event files it shows (tbparse)",
    r"--gpu": "needs GPUs (none on the CI machine)",
    r"--env sc2:": "needs StarCraft II (the examples' tests check the message that says so)",
    r"^cd |^repo>/tests/parl2/shims":
        "PARL 2.2.1's own example from its source tree, timed for the README's comparison "
        "(tests/test_parl2_*.py run PARL 2.x code unchanged)",
    r"benchmarks/marl/bench_marl\.py":
        "needs the peers' venvs (EPyMARL, BenchMARL: benchmarks/requirements-marl-*.txt)",
    r"bench_vs_sb3\.py": "needs Stable-Baselines3 (the benchmarks venv: benchmarks/requirements.txt)",
    r"bench_halfcheetah\.py": "runs Stable-Baselines3 beside ours (the benchmarks venv: benchmarks/requirements.txt)",
    r"impala/plot_curve\.py": "plots finished Pong episodes (thousands of steps): a tiny budget finishes none",
    r"examples_table\.py": "trains every example to its threshold (hours); has no budget flag",
}

# Flags appended to the page's command (the last occurrence wins), by script: tiny budgets.
_OFF_POLICY = ["--total-steps", "300", "--learning-starts", "200", "--eval-every", "300", "--no-progress"]
_OFFLINE = ["--collect-steps", "400", "--learning-starts", "200", "--gradient-steps", "20", "--eval-every", "10",
            "--no-progress"]
TINY: dict[str, list[str]] = {
    "examples/quickstart/train.py": ["--max-episodes", "4", "--episodes-per-update", "2", "--eval-every", "1",
                                     "--no-progress"],
    "examples/a2c/train.py": ["--total-steps", "512", "--no-progress"],
    "examples/ppo/train.py": ["--total-steps", "2048", "--no-progress"],  # one Pendulum rollout (8 x 256)
    "examples/dqn/train.py": ["--total-steps", "300", "--no-progress"],
    "examples/sac/train.py": _OFF_POLICY,
    "examples/td3/train.py": _OFF_POLICY,
    "examples/ddpg/train.py": _OFF_POLICY,
    "examples/oac/train.py": _OFF_POLICY,
    "examples/cql/train.py": [*_OFFLINE, "--policy-eval-start", "5"],
    "examples/iql/train.py": _OFFLINE,
    "examples/dt/train.py": _OFFLINE,
    "examples/dqn_variants/train.py": ["--total-steps", "300", "--warmup-size", "100", "--memory-size", "1000",
                                       "--eval-every", "300", "--eval-episodes", "1", "--no-progress"],
    "examples/coma/train.py": ["--total-steps", "600", "--num-envs", "2", "--eval-every", "300", "--eval-episodes",
                               "2", "--no-progress"],
    "examples/maddpg/train.py": ["--total-steps", "600", "--learning-starts", "300", "--eval-every", "600",
                                 "--eval-episodes", "1", "--final-eval-episodes", "1", "--no-progress"],
    "examples/mappo/train.py": ["--total-steps", "400", "--num-envs", "4", "--eval-every", "400", "--eval-episodes",
                                "2", "--no-progress"],
    "examples/qmix/train.py": ["--total-steps", "600", "--eval-every", "600", "--eval-episodes", "2",
                               "--envs-per-actor", "4", "--batch-size", "4", "--no-progress"],
    "examples/maml/train.py": ["--epochs", "1", "--iters-per-epoch", "2", "--train-tasks", "32", "--test-tasks", "100",
                               "--no-progress"],
    "examples/a2c_distributed/train.py": ["--total-steps", "512", "--no-progress"],
    "examples/ga3c/train.py": ["--total-steps", "500", "--no-progress"],
    "examples/impala/train.py": ["--total-steps", "1600", "--no-progress"],
    "examples/alphazero/train.py": ["--iterations", "1", "--games-per-iteration", "2", "--simulations", "4",
                                    "--eval-simulations", "4", "--channels", "8", "--blocks", "1", "--eval-every", "1",
                                    "--eval-games", "2", "--final-eval-games", "0", "--bot-simulations", "4",
                                    "--test-positions", "4", "--arena-games", "2", "--no-progress"],
    "examples/alphazero/solver.py": ["--positions", "4"],
    "examples/neurips2018_prosthetics/train.py": ["--time-limit", "12", "--total-steps", "20", "--warm-start-batches",
                                                  "0", "--train-times", "2", "--eval-every", "1000000",
                                                  "--no-progress"],
    "examples/es_mujoco/train.py": ["--min_episodes_per_batch", "2", "--min_steps_per_batch", "200",
                                    "--max_env_steps", "400", "--noise_size", "100000", "--eval_episodes", "1",
                                    "--hidden", "8", "--no-progress"],
    "examples/evokit/cartpole_es.py": ["--pop", "8", "--max-generations", "2", "--eval-episodes", "1"],
    "examples/evokit/pendulum_es.py": ["--pop", "8", "--starts", "2", "--max-generations", "2", "--eval-every", "1",
                                       "--eval-episodes", "1"],
    "examples/evokit/online_loop.py": ["--rounds", "2", "--samples", "6", "--eval-episodes", "1"],
    "benchmarks/distributed/bench_alphazero.py": ["--games", "2", "--simulations", "4", "--rounds", "1",
                                                  "--channels", "8", "--blocks", "1"],
    "benchmarks/scale/bench_scale.py": ["--workers", "10", "--cpus", "4", "--actors", "20", "--clients", "2",
                                        "--window", "1", "--settle", "0.5"],
}
# Counts a page may set higher than the CI machine's 2 cores hold; the command runs with the cap.
CAPS = {"--actors": 2, "--actor_num": 2, "--cpu-num": 4}
# Exit codes that mean success on a tiny budget, by script (with the reason).
EXIT_OK = {f"examples/evokit/{name}": (0, 1)  # 1: "not solved" within the budget (the summary is printed)
           for name in ("cartpole_es.py", "pendulum_es.py", "online_loop.py")}
NO_FLAGS = ("plot_curve.py",)  # scripts that run as the page writes them (plots of what earlier commands wrote)

BLOCKS = all_blocks()


@dataclasses.dataclass
class Command:
    page: str
    words: list[str]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    def not_run(self) -> str | None:
        """The reason this command does not run here (``NOT_RUN``), or None."""
        return next((why for pattern, why in NOT_RUN.items() if re.search(pattern, self.text)), None)


def _unbracket(words: list[str]) -> list[str]:
    """``[--double]`` -> ``--double``; ``[--port 8010]`` -> ``--port 8010``: optional flags run."""
    out = []
    for w in words:
        w = w[1:] if w.startswith("[-") else w
        out.append(w[:-1] if w.endswith("]") and "[" not in w else w)
    return out


def page_commands(page: str) -> list[Command]:
    """The commands of the page's shell blocks, in order (lines that are output or configuration left out)."""
    out = []
    for b in BLOCKS[page]:
        if b.lang in SHELL_LANGS:
            out += [Command(page, _unbracket(w)) for w in shell_commands(b.code) if PROGRAMS.match(w[0])]
    return out


COMMANDS = {page: page_commands(page) for page in BLOCKS}
RUN_PAGES = sorted(page for page, cmds in COMMANDS.items() if any(c.not_run() is None for c in cmds))



def _flag_value(words: list[str], flag: str) -> str | None:
    """The (first) value of the last occurrence of ``flag`` in ``words`` (``--x 1`` or ``--x=1``), or None."""
    values = _flag_values(words, flag)
    return values[0] if values else None


def _flag_values(words: list[str], flag: str) -> list[str]:
    """Every value of the last occurrence of ``flag`` (``--workers 10 100 1000`` -> three), ``[]`` if absent."""
    values: list[str] = []
    for i, w in enumerate(words):
        if w == flag:
            values = list(itertools.takewhile(lambda v: not v.startswith("--"), words[i + 1:]))
        elif w.startswith(flag + "="):
            values = [w.split("=", 1)[1]]
    return values


def capped(words: list[str]) -> list[str]:
    """``words`` with the counts of ``CAPS`` lowered to their caps (``--actors 15`` -> ``--actors 2``)."""
    out = list(words)
    for i, w in enumerate(out):
        flag, eq, value = w.partition("=")
        if flag in CAPS:
            if eq and (_number(value) or 0) > CAPS[flag]:
                out[i] = f"{flag}={CAPS[flag]}"
            elif not eq and i + 1 < len(out) and (_number(out[i + 1]) or 0) > CAPS[flag]:
                out[i + 1] = str(CAPS[flag])
    return out


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def tiny(words: list[str]) -> list[str]:
    """``words`` with the script's tiny-budget flags appended; a lower budget the page sets is kept."""
    script = next((w for w in words[1:] if w.endswith(".py")), None)
    if script is None or script.endswith(NO_FLAGS):
        return words
    if script not in TINY:
        raise KeyError(f"{script}: no tiny budget in TINY (docs/tests/test_shell_runs.py): add one")
    extra, flags = [], TINY[script]
    i = 0
    while i < len(flags):
        flag = flags[i]
        values = []
        i += 1
        while i < len(flags) and not flags[i].startswith("--"):
            values.append(flags[i])
            i += 1
        page_values = [_number(v) for v in _flag_values(words, flag)]
        tiny_value = _number(values[0] if len(values) == 1 else None)
        if page_values and tiny_value is not None and all(v is not None and v <= tiny_value for v in page_values):
            continue  # the page's budget is smaller already (e.g. --total-steps 0 to evaluate a restored model)
        extra += [flag, *values]
    return words + extra


class PageRun:
    """The state of one page's run: its directory, environment, cluster and servers."""

    def __init__(self, page: str, home: pathlib.Path):
        self.page, self.home = page, home
        for name in COPIED:  # copies, not links: a script may write beside itself (alphazero/solver.py --out)
            shutil.copytree(ROOT / name, home / name, ignore=shutil.ignore_patterns("__pycache__"))
        self.env = {**os.environ, "PARL_BACKEND": "torch", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
                    "PYTHONWARNINGS": "ignore", "XPARL_HOME": str(home / ".xparl")}
        self.port = free_port()
        self.cluster_started = False
        self.servers: list[subprocess.Popen] = []

    # --- placeholders ---------------------------------------------------------------------------------------------
    def typed(self, words: list[str]) -> list[str]:
        """The command as run here: placeholders replaced, tiny budgets appended."""
        out = []
        for w in words:
            w = re.sub(r"\b(HOST|10\.0\.0\.\d+|localhost):8010\b", f"127.0.0.1:{self.port}", w)
            w = w.replace("8010", str(self.port)) if w == "8010" else w
            if w == "$XPARL_TOKEN":
                w = self.token()
            if "/.../" in w:
                w = self.earlier_output(w)
            out.append(w)
        if out[:2] == ["xparl", "start"]:
            out += ["--monitor-port", str(free_port())]
            self.cluster_started = True
        elif "--address" in out and not any(w.startswith("ray://") for w in out):
            self.ensure_cluster()
        if "--token-file" in out:
            path = self.home / _flag_value(out, "--token-file")
            if not path.exists():
                path.write_text(self.token())
        if out[0] in ("python", "python3") or out[0].endswith("/python"):  # .venv/bin/python: this interpreter
            out[0] = sys.executable
        return tiny(capped(out))

    def earlier_output(self, word: str) -> str:
        """``runs/.../model.ckpt``: the newest file of that name under ``runs/`` an earlier command wrote."""
        head, name = word.split("/.../", 1)
        found = sorted(glob.glob(str(self.home / head / "**" / name), recursive=True), key=os.path.getmtime)
        if not found:
            raise AssertionError(f"{self.page}: `{word}`: no earlier command of the page wrote {head}/**/{name}")
        return os.path.relpath(found[-1], self.home)

    def token(self) -> str:
        self.ensure_cluster()
        return (self.home / ".xparl" / "clusters" / str(self.port) / "token").read_text().strip()

    def ensure_cluster(self) -> None:
        """A cluster on the page's port when a command names one that no command of the page started."""
        if not self.cluster_started:
            self.run(["xparl", "start", "--port", str(self.port), "--cpu-num", "2", "--no-monitor"], "(started for the "
                     "page's commands that name a cluster)")
            self.cluster_started = True

    # --- running --------------------------------------------------------------------------------------------------
    def run(self, cmd: list[str], shown: str) -> None:
        wall0, cpu0 = time.monotonic(), _children_cpu_s()
        try:
            proc = subprocess.run(cmd, cwd=self.home, env=self.env, capture_output=True, text=True, timeout=TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"{self.page}: `{shown}` ran past {TIMEOUT_S} s\nrun as: {' '.join(cmd)}\n"
                                 f"--- stderr (tail)\n{_tail(e.stderr)}") from None
        script = next((w for w in cmd[1:] if w.endswith(".py")), "")
        assert proc.returncode in EXIT_OK.get(script, (0,)), (
            f"{self.page}: `{shown}` exited {proc.returncode}\nrun as: {' '.join(cmd)}\n"
            f"--- stdout (tail)\n{_tail(proc.stdout)}\n--- stderr (tail)\n{_tail(proc.stderr)}")
        print(f"{time.monotonic() - wall0:7.1f} s wall {_children_cpu_s() - cpu0:7.1f} s cpu  {shown}")  # -rP shows it

    def serve(self, cmd: list[str], shown: str) -> None:
        """A server: starts, answers HTTP on its port within a deadline, and is stopped."""
        port = _flag_value(cmd, "--port")
        if port is None or port == "9000":  # the page's default (master port + 100) or example port: a free one
            port = str(free_port())
            cmd = [*cmd, "--port", port]
        proc = subprocess.Popen(cmd, cwd=self.home, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL)
        self.servers.append(proc)
        deadline = time.monotonic() + 60.0
        answer = None
        while time.monotonic() < deadline and proc.poll() is None and answer is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    answer = r.status
            except urllib.error.HTTPError as e:  # an answer (e.g. 401: the token is required)
                answer = e.code
            except OSError:
                time.sleep(0.2)
        if answer is None:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"{self.page}: `{shown}` did not answer HTTP on port {port} within 60 s (exit "
                                 f"{proc.returncode})\nrun as: {' '.join(cmd)}\n--- stderr (tail)\n{_tail(err)}")
        # 503: the monitor runs but its status of the cluster is not there yet (its first poll)
        assert answer in (200, 401, 403, 503), f"{self.page}: `{shown}` answered HTTP {answer}"
        proc.terminate()
        proc.communicate(timeout=30)

    def close(self) -> None:
        for proc in self.servers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        if self.cluster_started:
            subprocess.run(["xparl", "stop"], cwd=self.home, env=self.env, capture_output=True, timeout=120)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tail(text: str | bytes | None, n: int = 3000) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "")[-n:]


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_shell_commands_run(page, tmp_path):
    """The page's commands, in order, on tiny budgets: each exits 0 (servers answer HTTP)."""
    run = PageRun(page, tmp_path)
    try:
        for cmd in COMMANDS[page]:
            if cmd.not_run() is not None:
                continue
            typed = run.typed(cmd.words)
            if "parl_monitor" in typed:
                run.serve(typed, cmd.text)
            else:
                run.run(typed, cmd.text)
    finally:
        run.close()


def test_not_run_table_is_current_and_small():
    """Every ``NOT_RUN`` entry still matches a command of some page, and most commands run."""
    every = [c for cmds in COMMANDS.values() for c in cmds]
    stale = [p for p in NOT_RUN if not any(re.search(p, c.text) for c in every)]
    assert not stale, f"NOT_RUN entries that match no command of any page (remove them): {stale}"
    ran = [c for c in every if c.not_run() is None]
    assert len(ran) >= 100 and len(ran) >= 0.6 * len(every), (len(ran), len(every))


def test_every_script_run_has_a_tiny_budget():
    """A command of a script without a tiny budget would train for the page's full budget: none is left."""
    scripts = {w for cmds in COMMANDS.values() for c in cmds if c.not_run() is None for w in c.words[1:2]
               if w.endswith(".py") and not w.endswith(NO_FLAGS)}
    assert scripts - set(TINY) == set()
    assert set(TINY) - scripts == set(), "TINY entries no page runs (remove them)"


def test_tiny_keeps_the_pages_lower_budget_and_the_rest():
    words = ["python", "examples/maddpg/train.py", "--scenario", "simple_spread", "--total-steps", "0"]
    out = tiny(words)
    assert out[: len(words)] == words
    assert _flag_value(out, "--total-steps") == "0" and _flag_value(out, "--learning-starts") == "300"
    assert _flag_value(tiny(["python", "examples/dqn/train.py", "--total-steps", "50000"]), "--total-steps") == "300"
    assert _unbracket(["xparl", "stop", "[--port", "8010]", "[--double]"]) == ["xparl", "stop", "--port", "8010",
                                                                               "--double"]


def test_caps_and_multi_valued_budgets():
    """Counts above the caps are lowered; a flag with several values keeps the page's only if all are lower."""
    assert capped(["python", "x.py", "--actors", "15", "--cpu-num", "16"]) == ["python", "x.py", "--actors", "2",
                                                                             "--cpu-num", "4"]
    assert capped(["xparl", "start", "--cpu-num", "2", "--actor_num=8"]) == ["xparl", "start", "--cpu-num", "2",
                                                                             "--actor_num=2"]
    page = ["python", "benchmarks/scale/bench_scale.py", "--workers", "10", "100", "1000", "--link-grace", "1"]
    assert _flag_values(tiny(page), "--workers") == ["10"]
    low = ["python", "benchmarks/scale/bench_scale.py", "--workers", "2", "5"]
    assert _flag_values(tiny(low), "--workers") == ["2", "5"]
