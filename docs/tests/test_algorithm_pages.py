"""Every algorithm page (docs/algorithms/*.md, docs/distributed/*.md) follows one template: its first lines say
what budget its results are at, then the paper with its link, when to use it, a usage snippet that runs (the
snippets run in ``test_code_blocks.py``), the example's results, ONE learning-curve section with a figure, the
comparison with the reference, and its parameters."""

from __future__ import annotations

import re

import pytest
from blocks import DOCS, blocks, page_text

PAGES = sorted(p for folder in ("algorithms", "distributed") for p in (DOCS / folder).glob("*.md")
               if p.name != "index.md")
# Pages whose example writes no curve.csv (it cannot be plotted): the curve section says so instead of a figure.
NO_CURVE: set[str] = set()  # pages whose example writes no curve.csv (each must say so)
SECTIONS = ("Paper", "When to use it", "Usage", "The example", "Learning curve", "Comparison with the reference",
            "Parameters")


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a code comment is no heading)."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            fence = None if m and m.group(1).startswith(fence) else fence
        elif m:
            fence = m.group(1)
        else:
            out.append(line)
    return "\n".join(out)


def _sections(text: str) -> dict[str, str]:
    """``## Title`` -> the text up to the next ``## `` heading (fenced code left as it is)."""
    out: dict[str, str] = {}
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        out[title.strip()] = body
    return out


def test_the_pages_are_found():
    names = {p.stem for p in PAGES}
    assert {"dqn", "ppo", "sac", "impala", "maddpg", "qmix", "es_mujoco"} <= names
    assert len(PAGES) >= 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_page_has_the_template_sections(page):
    text = page_text(page)
    prose = _prose(text)
    h1 = re.findall(r"^# .+$", prose, re.M)
    assert len(h1) == 1, f"{page.name}: one title, got {h1} (a README included whole needs :body:)"
    first = text.split("\n## ", 1)[0].split("\n", 1)[1].strip()
    assert first, f"{page.name}: the first lines say at what budget the results are"
    sections = _sections(text)
    assert [s for s in sections if s in SECTIONS] == list(SECTIONS), \
        f"{page.name}: the template's sections in order {SECTIONS}, got {list(sections)}"
    assert re.search(r"\]\(https://(arxiv\.org|doi\.org)/", sections["Paper"]), f"{page.name}: no paper link"
    usage = [b for b in blocks(sections["Usage"], page.name) if b.lang == "python"]
    assert usage and all(b.sketch is None for b in usage), f"{page.name}: a runnable python usage snippet"
    assert re.search(r"^#+ .*Results", prose, re.M), f"{page.name}: no results section"
    curve_headings = re.findall(r"^#+ Learning curves?\b.*$", prose, re.M)
    assert curve_headings == ["## Learning curve"], f"{page.name}: one curve section, got {curve_headings}"
    if page.stem in NO_CURVE:
        assert "writes no `curve.csv`" in sections["Learning curve"], f"{page.name}: say why there is no curve"
    else:
        assert "{figure}" in sections["Learning curve"], f"{page.name}: the curve section shows no figure"
    assert "{py:class}" in sections["Parameters"] or "flags" in sections["Parameters"]


def test_minatar_curve_is_shown_once():
    """The MinAtar runs are plotted once (the build's figure), not also as the README's picture of the same data."""
    text = page_text(DOCS / "algorithms" / "dqn_variants.md")
    assert text.count("dqn_variants-minatar_breakout.png") == 1
    assert "minatar_breakout.png)" not in text
