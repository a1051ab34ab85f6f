"""Every code block of the site's pages and of the root README runs (python) or names real scripts and options.

Run by ``nox -s docs``; see ``blocks.py`` for the rules (sketches, shell blocks).
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import pytest
from blocks import ROOT, all_blocks, flags, shell_commands

BLOCKS = all_blocks()
RUNNABLE = {page: [b for b in bs if b.lang == "python" and b.sketch is None] for page, bs in BLOCKS.items()}
RUN_PAGES = sorted(page for page, bs in RUNNABLE.items() if bs)
TIMEOUT_S = 420


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PARL_BACKEND="torch", OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", MPLBACKEND="Agg")
    return env


def test_pages_have_code():
    """The extraction finds the blocks it should (a parser that finds nothing would pass every test below)."""
    assert {"docs/getting_started.md", "docs/cluster.md", "docs/save_restore.md", "docs/custom_algorithms.md",
            "README.md"} <= set(RUN_PAGES)
    assert sum(len(bs) for bs in RUNNABLE.values()) >= 9
    assert sum(len(shell_commands(b.code)) for bs in BLOCKS.values() for b in bs if b.lang != "python") >= 40


@pytest.mark.parametrize("page", RUN_PAGES)
def test_python_blocks_run(page, tmp_path):
    """The page's python blocks, in order, in one fresh interpreter (tiny training budgets as written)."""
    code = "\n".join(b.code for b in RUNNABLE[page])
    script = tmp_path / "page.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, (f"{page}: the python blocks failed\n--- stdout\n{proc.stdout}\n"
                                  f"--- stderr\n{proc.stderr}")


def test_sketches_compile_and_import(tmp_path):
    """Sketch blocks (placeholders for user data) compile, and their imports resolve."""
    imports = []
    sketches = [b for bs in BLOCKS.values() for b in bs if b.lang == "python" and b.sketch is not None]
    assert sketches, "no sketch found: the marker parser is broken"
    for b in sketches:
        tree = compile(b.code, b.source, "exec", ast.PyCF_ONLY_AST)
        imports += [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    script = tmp_path / "imports.py"
    script.write_text("\n".join(imports) + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr


def _scripts_and_flags():
    out = []
    for page, bs in BLOCKS.items():
        for b in bs:
            if b.lang == "python" or b.lang not in {"", "bash", "sh", "console", "shell", "text"}:
                continue
            for cmd in shell_commands(b.code):
                if cmd[0] in ("python", "python3") and len(cmd) > 1 and cmd[1].endswith(".py"):
                    out.append((page, cmd[1], flags(cmd[2:])))
    return out


SCRIPT_CMDS = _scripts_and_flags()


def test_shell_blocks_found_scripts():
    assert len(SCRIPT_CMDS) >= 30


@pytest.mark.parametrize("page,script,opts", SCRIPT_CMDS, ids=[f"{p}:{s}" for p, s, _ in SCRIPT_CMDS])
def test_script_and_flags_exist(page, script, opts):
    """``python examples/X/train.py --flag ...``: the script exists and defines every flag."""
    path = ROOT / script
    assert path.is_file(), f"{page}: {script} does not exist"
    source = path.read_text(encoding="utf-8")
    missing = [f for f in opts if f'"{f}"' not in source and f"'{f}'" not in source]
    if missing:  # options built at run time (e.g. from a dict of defaults): ask the script's --help
        proc = subprocess.run([sys.executable, str(path), "--help"], cwd=ROOT, env=_env(), capture_output=True,
                              text=True, timeout=TIMEOUT_S)
        assert proc.returncode == 0, f"{script} --help failed: {proc.stderr}"
        missing = [f for f in missing if f not in proc.stdout.split() and f"{f}," not in proc.stdout.split()]
    assert not missing, f"{page}: {script} defines no {missing}"


def _xparl_cmds():
    out = []
    for page, bs in BLOCKS.items():
        for b in bs:
            if b.lang == "python":
                continue
            out += [(page, cmd) for cmd in shell_commands(b.code) if cmd[0] == "xparl"]
    return out


XPARL_CMDS = _xparl_cmds()


def test_xparl_commands_exist():
    """``xparl SUB --opt ...`` in the pages: SUB is a command and each option is one of its options."""
    from parl_remote.cli import main

    assert len(XPARL_CMDS) >= 8
    for page, cmd in XPARL_CMDS:
        sub = main.commands.get(cmd[1]) if len(cmd) > 1 else None
        assert sub is not None, f"{page}: `{' '.join(cmd)}`: no xparl command {cmd[1:2]}"
        known = {o for p in sub.params for o in (*p.opts, *p.secondary_opts)}
        unknown = [f for f in flags(cmd[2:]) if f not in known]
        assert not unknown, f"{page}: `{' '.join(cmd)}`: xparl {cmd[1]} has no option {unknown}"


def test_blocks_parser_on_a_known_text():
    """The parser itself: fences, sketches, directives, shell commands."""
    from blocks import blocks

    text = ("```{toctree}\nx\n```\n<!-- docs: sketch: needs obs -->\n```python\nf(obs)\n```\n"
            "```console\n$ xparl start --port 8010  # comment\nA=1 python examples/x.py --a 1 [--b]\n```\n")
    found = blocks(text, "t")
    assert [(b.lang, b.sketch) for b in found] == [("python", "needs obs"), ("console", None)]
    assert shell_commands(found[1].code) == [["xparl", "start", "--port", "8010"],
                                             ["python", "examples/x.py", "--a", "1", "[--b]"]]
    assert flags(shell_commands(found[1].code)[1][2:]) == ["--a", "--b"]


def test_root_readme_is_checked():
    assert RUNNABLE["README.md"], "README.md's python blocks were not found"
    assert pathlib.Path(ROOT / "README.md").is_file()
