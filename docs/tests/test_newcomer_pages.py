"""What a newcomer meets first: the front page's snippet runs and learns; the Getting-started snippet reaches what
its comment says, within the episodes it says.

The snippets run as the pages show them (``blocks.py`` extracts them), in a fresh interpreter on one torch thread.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from blocks import DOCS, blocks, page_text

TIMEOUT_S = 300


def _run(code: str, tmp_path) -> str:
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg"}
    env.pop("PARL_BACKEND", None)  # the snippets choose the backend themselves, as a reader's copy would
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    return proc.stdout


def _python_blocks(page: str) -> list[str]:
    path = DOCS / page
    return [b.code for b in blocks(page_text(path), page) if b.lang == "python" and b.sketch is None]


def test_front_page_snippet_runs_and_learns(tmp_path):
    """The front page shows one runnable training snippet; the policy it trains beats random play (about 20)."""
    (code,) = _python_blocks("index.md")
    out = _run(code, tmp_path)
    m = re.search(r"mean return of episodes 130-149: (\d+)", out)
    assert m, out
    assert int(m.group(1)) > 60, f"the front page's agent did not learn: {out}"


def test_getting_started_snippet_reaches_its_comment(tmp_path):
    """``EPISODES = N  # seed 0: the mean return of the last K episodes is above R``: running the snippet as written
    prints that mean after N episodes, and it is above R."""
    (code,) = _python_blocks("getting_started.md")
    claim = re.search(r"^EPISODES = (\d+)  # seed 0: the mean return of the last (\d+) episodes is above (\d+)", code,
                      re.M)
    assert claim, "the snippet's EPISODES comment no longer states what it reaches"
    episodes, last, above = (int(g) for g in claim.groups())
    assert "np.random.seed(0)" in code and "torch.manual_seed(0)" in code
    out = _run(code, tmp_path)
    m = re.search(rf"^{episodes} episodes: mean return of the last {last} (\d+)$", out, re.M)
    assert m, out
    assert int(m.group(1)) > above, f"the Getting-started snippet's comment promises > {above}: {out}"


def _headings(text: str) -> list[tuple[int, str, bool]]:
    """``(level, title, has_content)`` for each Markdown heading outside code fences; ``has_content``: some
    non-blank line comes before the next heading of the same or a higher level."""
    found: list[list] = []
    fence = None
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            if found:
                found[-1][2] = True
            continue
        m = re.match(r"^(`{3,}|~{3,})", stripped)
        if m:
            fence = m.group(1)
            if found:
                found[-1][2] = True
            continue
        h = re.match(r"^(#{1,6}) (.+)$", line)
        if h:
            found.append([len(h.group(1)), h.group(2).strip(), False])
        elif stripped and found:
            found[-1][2] = True
    out = []
    for i, (level, title, content) in enumerate(found):
        nested = i + 1 < len(found) and found[i + 1][0] > level  # a heading whose content is its subsections
        out.append((level, title, content or nested))
    return out


def _site_pages():
    from blocks import pages

    return [p for p in pages() if p.parent != DOCS.parent]


def test_every_page_has_one_title_and_no_empty_heading():
    """Included READMEs add no second top-level heading (``:shift:`` / ``:body:``), and no heading is left empty."""
    problems = []
    for page in _site_pages():
        heads = _headings(page_text(page))
        titles = [t for level, t, _ in heads if level == 1]
        if len(titles) != 1:
            problems.append(f"{page.relative_to(DOCS)}: titles {titles}")
        problems += [f"{page.relative_to(DOCS)}: empty heading {t!r}" for _, t, content in heads if not content]
    assert not problems, "\n".join(problems)
