"""Every tracked text file of the repository speaks of the product, not of how its work was organised.

Two kinds of text fail this test (``nox -s docs`` runs it with the other docs tests):

* words about the people and runs behind a measurement instead of the measurement ("this session", "other
  helpers' jobs", "the lead's benchmark", "another engineer"): a benchmark states its load in a column or a
  sentence ("load average 3.1-5.1, other processes on the machine"), not who ran what beside it;
* an absolute path of one particular machine (a home or scratch directory, a virtual environment of a run, a
  local wheel folder): commands name their paths relative to the repository or as placeholders (``<venv>``).

"Session" in its other senses stays legitimate and is not matched: a nox session (``nox -s docs``, "the docs
session"), a pytest session fixture, an HTTP session cookie, a process session (``start_new_session``), a Ray or
interactive session. So do product paths such as ``/proc/loadavg``, ``/dev/shm``, ``~/.parl`` and the generic
``/tmp/<name>`` of a usage example.
"""

from __future__ import annotations

import functools
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
THIS = pathlib.Path(__file__).resolve().relative_to(ROOT).as_posix()

# Words about the work's organisation (case-insensitive). Each is narrow enough to leave the legitimate senses of
# "session" (nox, pytest, HTTP, process group, interactive) and "helper" (a helper function) alone.
PHRASES: tuple[tuple[str, str], ...] = (
    ("this session", r"\bthis session\b"),
    ("the session's end", r"\b(at )?the end of the session\b|\bthe session'?s? end\b"),
    ("the session that ran", r"\bthe session that ran\b"),
    ("an earlier / later session", r"\b(an?|the) (earlier|later|previous|next) session\b"),
    ("other sessions", r"\b(no |any )?other (helper )?sessions?\b|\b(other|helper) sessions'"),
    ("sessions' jobs", r"\bsessions' (jobs?|tests?|test suites?|work|training runs?|runs?|benchmarks?)\b"),
    ("helpers' jobs", r"\bhelpers?'s? (jobs?|tests?|test suites?|runs?|benchmarks?|sessions?)\b"),
    ("other helpers", r"\b(other|another|every other|the benchmark) helpers?\b(?! (function|method|class|module))"),
    ("helper sessions", r"\bhelper sessions?\b"),
    ("the lead", r"\bthe lead('s)?\b(?! (axis|dimension))"),
    ("engineers", r"\bengineers?('s?)?\b"),
    ("the CEO", r"\bCEO\b"),
    ("subagents", r"\bsub-?agents?\b"),
    ("who ran what", r"\bwho ran\b"),
    ("a lent machine", r"\b(not |none was |no )lent\b|\blent to (this|the) (task|session)\b"),
)
# Absolute paths of one machine. /tmp is matched only with a component that a run generates (pytest's and
# mkdtemp's names, long digit or hex runs) or a scratch folder's name; a usage example's /tmp/<name> is fine.
PATHS: tuple[tuple[str, str], ...] = (
    ("a path under /root", r"(?<![\w.~-])/root(/|\b)"),
    ("a path under /work", r"(?<![\w.~-])/work/"),
    ("a scratch folder", r"(?<![\w.~-])/scratch/"),
    ("a home folder", r"(?<![\w.~-])/(home|Users)/[A-Za-z_][\w.-]*/"),
    ("a local wheel folder", r"(?<![\w.~-])/opt/wheels\b"),
    ("a run's /tmp folder", r"(?<![\w.~-])/tmp/(pytest-of-|bash_jobs|tmp[\w-]{6,}|nox|scratch|wt-|venv-?)"
                            r"|(?<![\w.~-])/tmp/[^\s/'\"`)]*(\d{6,}|[0-9a-f]{12,})"),
)
# Placeholders that look like a machine path but are a test's fake data (file glob -> allowed pattern).
ALLOWED: dict[str, str] = {
    "packages/parl-monitor/tests/*": r"/home/[uv]/",  # the fake cluster's clients' scripts
}
# A phrase may be wrapped over two lines, in prose or in a comment (a space of a rule matches "\n    # " too).
_GAP = r"\s+(?:(?:#|//|\*|>)\s*)?"
# Known offences in files that are being reworded on another branch: (path, matched text). Each is skipped until
# it is gone, and then must be removed from here (test_pending_entries_still_occur).
_RULES = ([(name, re.compile(rx.replace(" ", _GAP), re.I)) for name, rx in PHRASES]
          + [(name, re.compile(rx)) for name, rx in PATHS])


def offences(text: str, path: str = "") -> list[tuple[int, str, str]]:
    """``(line number, rule name, matched text)`` for each forbidden phrase or machine path in ``text``; ``path``
    (repository-relative) selects the :data:`ALLOWED` exceptions."""
    allowed = [re.compile(rx) for glob, rx in ALLOWED.items() if path and pathlib.PurePosixPath(path).match(glob)]
    found = []
    for name, rule in _RULES:
        for m in rule.finditer(text):
            if not any(a.match(text, m.start()) for a in allowed):
                found.append((text.count("\n", 0, m.start()) + 1, name, " ".join(m.group(0).split())))
    return sorted(found)


def tracked_files() -> list[str]:
    """The repository's tracked files (``git ls-files``); without git, every file outside hidden and build
    folders."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        skip = {"_build", "_generated", "__pycache__", "node_modules"}
        return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()
                and not any(part.startswith(".") or part in skip or part.endswith(".egg-info")
                            for part in p.relative_to(ROOT).parts)]


def read_text(path: pathlib.Path) -> str | None:
    """The file's text, or None for a binary (a NUL byte, or not UTF-8) or missing file."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@functools.cache
def scan() -> tuple[tuple[str, int, str, str], ...]:
    """``(path, line number, rule name, matched text)`` for every offence in the tracked text files (this file,
    which holds the rules and planted examples, excepted)."""
    found = []
    for rel in tracked_files():
        text = None if rel == THIS else read_text(ROOT / rel)
        if text is not None:
            found += [(rel, number, name, matched) for number, name, matched in offences(text, rel)]
    return tuple(found)


def test_tracked_files_speak_of_the_product():
    assert len(tracked_files()) > 100 and "benchmarks/README.md" in tracked_files()
    report = [f"{rel}:{number}: {name}: {matched!r}" for rel, number, name, matched in scan()]
    assert not report, ("words about the work's organisation or a machine's own paths (rewrite them to speak of "
                        "the product: the load average, the command with relative paths):\n" + "\n".join(report))


@pytest.mark.parametrize("planted", [
    "measured while other helpers' jobs ran",
    "load 3.1-5.1 (the lead's benchmark)",
    "stopped at the end of the session",
    "a later session will rerun it",
    "in this session, seeds 1 and 2",
    "other sessions' jobs kept the load high",
    "stopped by another engineer",
    "the runs were stopped with the\nsession that ran them",
    "# measured in this\n    # session, seeds 1 and 2",
    "the CEO asked for it",
    "no lent machine this time",
    "--parl-python /work/scratch/parl221/bin/python",
    "python at /root/venv/bin/python",
    "wheels from /opt/wheels",
    "see /home/alice/runs/out.json",
    "open /Users/bob/parl/bench.json",
    "logs in /tmp/pytest-of-root/pytest-3/x",
    "written to /tmp/tmpa8x_k2q9/run",
])
def test_the_check_catches_a_planted_example(planted):
    assert offences(f"first line\n{planted}\n"), planted
    assert offences(f"x\n{planted}\n")[0][0] == 2


@pytest.mark.parametrize("legitimate", [
    "nox -s docs: the docs session builds the site",
    "The test and documentation sessions",
    "the `tests` session deselects the marker",
    "a session fixture: @pytest.fixture(scope=\"session\")",
    "it sets a session cookie and redirects",
    "subprocess.Popen(cmd, start_new_session=True)  # its own session",
    "the user's last session ends (logind)",
    "an interactive session or a notebook",
    "the sessions' uv installs compile bytecode",
    "Helpers shared by the torch algorithms; the torch helper of the same name",
    "the load average is in /proc/loadavg; arrays in /dev/shm; tokens under ~/.parl",
    "python -m venv /tmp/parl221 && /tmp/parl221/bin/pip install parl==2.2.1",
    "COPY packages /tmp/parl/packages",
    "lead = (1,) if paddle else ()  # a leading axis",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "/workers and /clients are the monitor's routes",
])
def test_legitimate_senses_are_not_matched(legitimate):
    assert offences(legitimate) == []


def test_allowed_placeholders_only_where_listed():
    line = 'File "/home/u/train.py", line 12'
    assert offences(line, "packages/parl-monitor/tests/fake_cluster.py") == []
    assert offences(line, "docs/index.md") != []
