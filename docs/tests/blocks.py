"""The code blocks of the site's pages (READMEs included as the site shows them) and of the root README.md.

A fenced ``python`` block runs: the runnable blocks of one page run in order, in one fresh interpreter, in a
temporary directory. A ``python`` block preceded (on the line just before its fence) by the comment
``<!-- docs: sketch: REASON -->`` is a sketch with placeholders (``obs``, ``traffic``, a cluster address): it is
compiled and its import statements run (``test_code_blocks.py``). Shell blocks (``bash``, ``console``, ``text``
and unlabeled) are checked statically: every ``python examples/...`` / ``benchmarks/...`` script they run exists and
defines each ``--flag`` they pass, and every ``xparl`` command exists with each option they pass
(``test_code_blocks.py``); and they run: each page's commands in the page's order, on tiny training budgets, in a
temporary directory, except the few ``test_shell_runs.NOT_RUN`` lists with the reason (``test_shell_runs.py``).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex
import socket
import sys

DOCS = pathlib.Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

import parl_docs  # noqa: E402

SKETCH = re.compile(r"^<!-- docs: sketch: (?P<reason>\S.*?) -->\s*$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
SHELL_LANGS = {"", "bash", "sh", "console", "shell", "text"}


@dataclasses.dataclass
class Block:
    """One fenced code block: where it is shown, its language, its text and its sketch reason (or None)."""

    source: str
    lang: str
    code: str
    sketch: str | None


def page_text(page: pathlib.Path) -> str:
    """A page's Markdown as Sphinx reads it: its ``{readme}`` blocks replaced by the READMEs."""
    text = page.read_text(encoding="utf-8")
    if page == ROOT / "README.md":
        return text
    docname = page.relative_to(DOCS).with_suffix("").as_posix()
    pages = parl_docs.whole_readme_pages()
    for m, path, opts in reversed(parl_docs.readme_blocks(text)):
        text = text[: m.start()] + parl_docs.render_readme(path, opts, docname, pages) + text[m.end():]
    return text


def blocks(text: str, source: str) -> list[Block]:
    """The fenced code blocks of Markdown ``text`` (MyST directives such as ``{toctree}`` left out)."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        lang = info.split()[0] if info else ""
        if not lang.startswith("{"):
            sketch = SKETCH.match(lines[i - 1]) if i > 0 else None
            out.append(Block(source, lang, "\n".join(lines[i + 1: j]) + "\n",
                             sketch.group("reason") if sketch else None))
        i = j + 1
    return out


def pages() -> list[pathlib.Path]:
    """The site's Markdown pages and the root README."""
    found = [p for p in sorted(DOCS.rglob("*.md")) if not ({"_build", "tests"} & set(p.relative_to(DOCS).parts))]
    return found + [ROOT / "README.md"]


def all_blocks() -> dict[str, list[Block]]:
    """Repository-relative page path -> its code blocks."""
    out = {}
    for page in pages():
        name = page.relative_to(ROOT).as_posix()
        out[name] = blocks(page_text(page), name)
    return out


def shell_commands(code: str) -> list[list[str]]:
    """The commands of a shell block: prompts, comments and continuation lines handled; non-commands dropped."""
    out = []
    joined = re.sub(r"\\\n\s*", " ", code)
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for part in _split_on(words, {"&&", "||", ";", "|"}):
            while part and "=" in part[0] and not part[0].startswith("-"):  # VAR=value prefixes
                part = part[1:]
            if part:
                out.append(part)
    return out


def _split_on(words: list[str], seps: set[str]) -> list[list[str]]:
    out, cur = [], []
    for w in words:
        if w in seps:
            out.append(cur)
            cur = []
        else:
            cur.append(w)
    out.append(cur)
    return out


def flags(args: list[str]) -> list[str]:
    """The ``--long`` options in ``args`` (``--x=1`` -> ``--x``; ``[--double]`` -> ``--double``)."""
    return [a.strip("[]").split("=")[0] for a in args if a.strip("[]").startswith("--")]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS picks it), for a server a test starts; never a fixed port."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
