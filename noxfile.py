"""Development sessions for the PARL monorepo.

Sessions:
    tests(package)  one per package; installs that package and its siblings editable from the tree
    integration     the cross-package tests under ``tests/``
    lint            ruff over the whole tree
    wheels          builds every package, installs all wheels together into a clean venv, smoke-imports
    ray             the Ray engine: parl-remote's tests marked ``ray`` (one test body per behaviour on xparl and on a
                    real local Ray cluster) and the distributed examples on Ray; its own session, so the main
                    test command's time stays within CI's limit
    demo            trains the QuickStart agent (the main job)
    docs            builds the documentation site (docs/ -> docs/_build/html) with warnings as errors and tests it:
                    every code block runs, internal links and anchors resolve, the site works in headless Chromium

Virtual environments are made and filled by uv when it is installed (``pip install "nox[uv]"``, as the README's
commands do: about 10 s a session instead of pip's 1-2 min), by venv + pip otherwise. uv does not read pip's
configuration, so the find-links pip is configured with (where this machine keeps torch's CPU wheel) are handed to
uv through ``UV_FIND_LINKS``.

Torch and paddlepaddle are pinned through ``constraints.txt`` (their CPU wheels are on the machine);
package metadata keeps open ranges. parl-core's and parl-algorithms' tests run every behaviour on both
backends, so their sessions install both frameworks. After installing, a guard fails the session if any of
the six distributions came from a registry instead of this tree.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import nox

ROOT = pathlib.Path(__file__).parent
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))

# Packages in dependency order: (folder, distribution name, extras used for development).
PACKAGES = {
    "parl-core": ("parl-core", "torch,marl"),  # marl: the multi-agent envs (mpe2, LBF, RWARE)
    "parl-algorithms": ("parl-algorithms", ""),
    "parl-remote": ("parl-remote", ""),
    "parl-monitor": ("parl-monitor", ""),
    "evokit": ("parl-evokit", "torch"),
    "parl": ("parl", ""),
}
# What each package's test session installs from the tree (siblings in dependency order).
SIBLINGS = {
    "parl-core": ["parl-core"],
    # the examples (run as subprocesses by these tests) are written PARL-style against `import parl`
    "parl-algorithms": list(PACKAGES),
    "parl-remote": ["parl-remote"],
    "parl-monitor": ["parl-remote", "parl-monitor"],
    "evokit": ["parl-core", "parl-remote", "evokit"],  # parl-core: examples/es_mujoco's run harness (--resume)
    "parl": list(PACKAGES),
}
TEST_DEPS = ("pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.5")
# Extra third-party packages a package's tests need (never part of its runtime dependencies).
EXTRA_TEST_DEPS: dict[str, tuple[str, ...]] = {
    # both backends: each test body runs on torch and on paddle (versions pinned by constraints.txt)
    "parl-core": ("tbparse>=0.0.9", "tensorboard>=2.15", "paddlepaddle>=3.0", "minatar>=1.0.15",
                  "envpool>=1.2", "ale-py>=0.9", "opencv-python-headless>=4.8",  # EnvPoolAtari vs wrap_deepmind
                  "gymnasium[mujoco]>=1.0"),  # EnvPoolMuJoCo vs gymnasium's MuJoCo tasks
    "parl-algorithms": ("torch>=2.1", "paddlepaddle>=3.0",
                        "ale-py>=0.9", "opencv-python-headless>=4.8",  # Atari: wrap_deepmind, examples/impala
                        "minatar>=1.0.15",  # MinAtar: the distributed examples' small games
                        "envpool>=1.2"),  # examples/impala --envpool
    "parl-remote": ("numpy>=1.24",),
    "parl-monitor": ("selenium>=4.15",),
    "evokit": ("cma>=3.3", "gymnasium>=1.0", "psutil>=5.9", "tensorboardX>=2.6", "paddlepaddle>=3.0", "tqdm>=4.60"),
    # paddle too: PARL 2.2.1's paddle algorithm modules are in the names test (test_parl221_names.py); with both
    # frameworks installed PARL's default is paddle, so this package's tests select torch (PARL_BACKEND) as they expect
    "parl": ("paddlepaddle>=3.0",),
}
# The documentation site: Sphinx and its extensions, matplotlib (the learning curves of examples/*/results), and
# selenium for the browser test (docs/tests).
DOCS_DEPS = ("sphinx>=8", "furo>=2024.8", "myst-parser>=4", "sphinx-click>=6", "matplotlib>=3.7", "selenium>=4.15",
             "paddlepaddle>=3.0",  # paddle: the API reference documents parl_core.paddle and parl_algorithms.paddle
             "pytest-xdist>=3.5",  # the pages run in parallel (docs/tests/test_shell_runs.py: one test per page)
             # what the pages' shell commands run on tiny budgets need (docs/tests/test_shell_runs.py), besides
             # parl-core[marl] (mpe2, LBF, RWARE): MuJoCo (HalfCheetah), Atari and MinAtar, EnvPool, OpenSpiel
             # (examples/alphazero), OpenSim (examples/neurips2018_prosthetics)
             "gymnasium[mujoco]>=1.0", "ale-py>=0.9", "opencv-python-headless>=4.8", "minatar>=1.0.15", "envpool>=1.2",
             "open-spiel>=2.0.2", "opensim>=4.6")
# What tests/ (PARL 2.x code run unchanged, the examples' tests) needs besides the packages, one per line.
INTEGRATION_DEPS = (
    "ale-py>=0.9", "opencv-python-headless>=4.8",  # Atari, for wrap_deepmind
    "open-spiel>=2.0.2",  # the opponent of examples/alphazero (parl-algorithms[open_spiel])
    # PARL's course (tests/test_parl2_course.py): paddle code, Pong, and LunarLanderContinuous in place of rlschool's
    # quadrotor
    "paddlepaddle>=3.0", "box2d>=2.3.10",
    "minatar>=1.0.15",  # tests/test_example_dqn_variants.py: MinAtar Breakout
    "opensim>=4.6",  # examples/neurips2018_prosthetics (tests/test_example_prosthetics.py; parl[prosthetics])
    "envpool>=1.2", "gymnasium[mujoco]>=1.0",  # examples/es_mujoco --envpool (tests/test_example_es_mujoco_envpool.py)
)


def pip_find_links() -> str:
    """The find-links pip is configured with (``PIP_FIND_LINKS`` or pip's config files), comma-separated as uv
    reads them; ``""`` when there are none."""
    links = os.environ.get("PIP_FIND_LINKS", "")
    if not links:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"],
                             capture_output=True, text=True, check=False)
        links = out.stdout.strip() if out.returncode == 0 else ""
    return ",".join(links.split())


if "UV_FIND_LINKS" not in os.environ and (_links := pip_find_links()):
    os.environ["UV_FIND_LINKS"] = _links  # the sessions' uv installs see pip's local wheels (torch's CPU build)
# The sessions' uv installs compile the installed packages' bytecode, as pip does (uv does not by default). The tests
# start hundreds of Python processes (the examples, remote actors, the docs pages' commands), and where
# PYTHONDONTWRITEBYTECODE is set, as on the CI machine, every one of them compiled torch's and paddle's sources again
# on import: `import torch` 6.2 -> 2.7 s, `import paddle` 6.8 -> 1.8 s; the qmix and mappo pages' commands 126 -> 65 s.
os.environ.setdefault("UV_COMPILE_BYTECODE", "1")

nox.options.default_venv_backend = "uv|venv"
nox.options.reuse_existing_virtualenvs = False
nox.options.sessions = ["lint", "tests", "integration", "wheels", "ray", "docs"]
# Tests marked `ray` start a Ray cluster and need Ray: only the `ray` session runs them.
NOT_RAY = ("-m", "not ray")
# The slowest tests of each session in its log: where CI's time goes (the whole test command has a 45-minute budget).
DURATIONS = ("--durations=10",)
# Tests run on every CPU (pytest-xdist, one worker per CPU; work stealing evens out the slow example tests): on this
# project's 2-core CI machine the test sessions take a third of their serial time (parl-algorithms: 17 -> 5 min), most
# tests waiting on subprocesses, clusters and sockets. `nox -s tests -- -n 0` runs them serially.
PARALLEL = ("-n", "auto", "--dist", "worksteal")


def _spec(folder: str) -> str:
    _, extras = PACKAGES[folder]
    path = str(ROOT / "packages" / folder)
    return f"{path}[{extras}]" if extras else path


def install_tree(session: nox.Session, folders: list[str], *extra: str) -> None:
    """Install the given packages editable, in dependency order, plus ``extra`` requirements."""
    args: list[str] = []
    for folder in folders:
        args += ["-e", _spec(folder)]
    session.install(*CONSTRAINTS, *args, *extra)
    guard_from_tree(session, [PACKAGES[f][0] for f in folders])


def guard_from_tree(session: nox.Session, dists: list[str]) -> None:
    """Fail the session if any of our distributions came from a registry (no ``file://`` origin)."""
    code = (
        "import json, sys\n"
        "from importlib.metadata import distribution\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    d = distribution(name)\n"
        "    out[name] = d.read_text('direct_url.json') or ''\n"
        "print(json.dumps(out))\n"
    )
    raw = session.run("python", "-c", code, *dists, silent=True)
    found = json.loads(raw.strip().splitlines()[-1])
    bad = {name for name, url in found.items() if "file://" not in url}
    if bad:
        session.error(f"installed from a registry instead of the tree: {sorted(bad)}; "
                      "install the siblings from packages/ in dependency order")


@nox.session
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str) -> None:
    """Run one package's own tests (packages/<package>/tests) with its siblings from the tree."""
    install_tree(session, SIBLINGS[package], *TEST_DEPS, *EXTRA_TEST_DEPS[package])
    if package == "parl-monitor":
        # The browser tests drive Debian's chromium (no browser download works here); idempotent.
        session.run("bash", str(ROOT / "packages" / "parl-monitor" / "tests" / "install_chromium.sh"), external=True)
        # The scrape test starts Debian's prometheus on loopback against the monitor's /metrics; idempotent.
        session.run("bash", str(ROOT / "packages" / "parl-monitor" / "tests" / "install_prometheus.sh"), external=True)
    env = {"PYTHONHASHSEED": "0", **({"PARL_BACKEND": "torch"} if package == "parl" else {})}
    session.run("pytest", str(ROOT / "packages" / package / "tests"), *NOT_RAY, *DURATIONS, *PARALLEL, *session.posargs,
                env=env)


@nox.session
def integration(session: nox.Session) -> None:
    """Run the cross-package tests in tests/ (the quickstart subprocess and learn-to-threshold runs)."""
    install_tree(session, list(PACKAGES), *TEST_DEPS, *INTEGRATION_DEPS)
    # both frameworks are installed (PARL's default is then paddle): the PARL 2.x torch code of tests/ selects torch,
    # as PARL's users do; the paddle programs (the course, examples/QuickStart and DQN) set PARL_BACKEND=paddle
    session.run("pytest", str(ROOT / "tests"), *NOT_RAY, *DURATIONS, *PARALLEL, *session.posargs,
                env={"PARL_BACKEND": "torch"})


@nox.session
def ray(session: nox.Session) -> None:
    """The Ray engine (``parl.connect("ray://...")``) against real local Ray clusters on loopback: parl-remote's
    tests marked ``ray`` (with their xparl twins of test_engines.py) and the distributed examples by --address."""
    install_tree(session, list(PACKAGES), *TEST_DEPS)
    session.install(*CONSTRAINTS, "-e", f"{ROOT / 'packages' / 'parl-remote'}[ray]", "numpy>=1.24")
    guard_from_tree(session, [dist for dist, _ in PACKAGES.values()])
    remote_tests = ROOT / "packages" / "parl-remote" / "tests"
    session.run("pytest", str(remote_tests / "test_engines.py"), str(remote_tests / "test_ray_engine.py"),
                *session.posargs)
    session.run("pytest", str(ROOT / "tests" / "test_examples_on_ray.py"), *session.posargs)  # its own conftest


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over packages/, examples/, benchmarks/, tests/ and this file; the architecture's import contracts
    (``.importlinter``: parl-remote imports no deep-learning framework and keeps its layers one way, parl-core never
    imports parl-algorithms, no import cycles) with import-linter over the six packages (installed without their
    dependencies: the contracts read the source, they run nothing)."""
    session.install("ruff>=0.5", "import-linter>=2.0")
    session.run("ruff", "check", str(ROOT))
    session.install("--no-deps", *[arg for folder in PACKAGES for arg in ("-e", str(ROOT / "packages" / folder))])
    session.run("lint-imports", "--config", str(ROOT / ".importlinter"))


@nox.session
def wheels(session: nox.Session) -> None:
    """Build every package's wheel, install them all together in this clean venv, smoke-import."""
    dist = pathlib.Path(session.create_tmp()) / "dist"
    # with uv, the isolated build environments and the two single-framework venvs below are made by uv (seconds
    # each, against pip's 10-60 s)
    uv = session.venv_backend == "uv"
    session.install("build[uv]>=1.0" if uv else "build>=1.0")
    for folder in PACKAGES:
        session.run("python", "-m", "build", "--wheel", *(("--installer", "uv") if uv else ()), "--outdir", str(dist),
                    str(ROOT / "packages" / folder), silent=True)
    wheels_built = sorted(str(p) for p in dist.glob("*.whl"))
    if len(wheels_built) != len(PACKAGES):
        session.error(f"expected {len(PACKAGES)} wheels, built {wheels_built}")
    # Third-party dependencies come from the registry; the six of ours from the wheel files.
    session.install(*CONSTRAINTS, "--find-links", str(dist), *wheels_built, "torch")
    guard_from_tree(session, [dist_name for dist_name, _ in PACKAGES.values()])
    session.run("python", "-c", "import parl, parl_core, parl_algorithms, parl_remote, parl_monitor, evokit; "
                "print('import parl OK', parl.__version__)")
    session.run("xparl", "--help", silent=True)
    # each framework alone: `pip install parl-core[<backend>]` (without the other) imports and trains a step
    for backend, absent in (("paddle", "torch"), ("torch", "paddle")):
        venv = pathlib.Path(session.create_tmp()) / f"only-{backend}"
        python = str(venv / "bin" / "python")
        core = next(w for w in wheels_built if pathlib.Path(w).name.startswith("parl_core-"))
        algorithms = next(w for w in wheels_built if pathlib.Path(w).name.startswith("parl_algorithms-"))
        wanted = (*CONSTRAINTS, "--find-links", str(dist), f"{core}[{backend}]", algorithms)
        if uv:
            session.run("python", "-m", "uv", "venv", "--clear", "-q", str(venv), silent=True)
            session.run("python", "-m", "uv", "pip", "install", "-q", "--python", python, *wanted)
        else:
            session.run("python", "-m", "venv", "--clear", str(venv), silent=True)
            session.run(python, "-m", "pip", "install", "-q", *wanted, external=True)
        session.run(python, "-c", ONE_STEP.format(backend=backend, absent=absent), external=True)


# Trains one DQN step on the only installed framework (used by the wheels session).
ONE_STEP = """
import importlib.util, sys
import numpy as np
assert importlib.util.find_spec({absent!r}) is None, '{absent} must not be installed here'
import parl_core, parl_algorithms
assert parl_core.get_backend() == {backend!r}, parl_core.get_backend()
nn = ({backend!r} == 'torch' and __import__('torch').nn) or __import__('paddle').nn
class Q(parl_core.Model):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, obs):
        return self.fc(obs)
agent = parl_core.Agent(parl_algorithms.DQN(Q(), gamma=0.9, lr=1e-2))
rng = np.random.default_rng(0)
loss = agent.learn(rng.normal(size=(8, 4)), rng.integers(0, 2, 8), rng.normal(size=8), rng.normal(size=(8, 4)),
                   np.zeros(8))
assert np.isfinite(loss), loss
print('parl-core[{backend}] without {absent}: one DQN step, loss', loss)
"""


@nox.session
def docs(session: nox.Session) -> None:
    """Build docs/ into docs/_build/html with ``sphinx-build -W`` (a warning, a public name without a docstring or a
    broken internal link fails), then run docs/tests: the pages' and README.md's code blocks, the links and anchors
    of the built HTML, and the site in headless Chromium (home page, search, an API signature). The pages' shell
    commands run too, on tiny budgets (docs/tests/test_shell_runs.py), one test per page spread over the cores."""
    install_tree(session, list(PACKAGES), *TEST_DEPS, *DOCS_DEPS)
    session.run("bash", str(ROOT / "packages" / "parl-monitor" / "tests" / "install_chromium.sh"), external=True)
    html = ROOT / "docs" / "_build" / "html"
    env = {"PARL_BACKEND": "torch", "OMP_NUM_THREADS": "1"}
    session.run("sphinx-build", "-E", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"), str(html),
                env=env)
    session.log(f"the site: {html / 'index.html'}")
    session.run("pytest", str(ROOT / "docs" / "tests"), "-p", "no:cacheprovider", *DURATIONS, *PARALLEL,
                *session.posargs,
                env={**env, "PARL_DOCS_HTML": str(html)})


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: train the QuickStart Policy Gradient agent on CartPole-v1."""
    install_tree(session, list(PACKAGES))
    session.run("python", str(ROOT / "examples" / "quickstart" / "train.py"), *session.posargs)
