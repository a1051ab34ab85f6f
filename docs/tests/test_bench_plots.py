"""docs/_ext/bench_plots.py: every plot finds its table in benchmarks/README.md and a number in each of its cells,
and the parser reads a known table as written."""

from __future__ import annotations

import bench_plots
import pytest


@pytest.mark.parametrize("plot", bench_plots.PLOTS, ids=lambda p: p.name)
def test_every_plot_finds_its_numbers(plot, tmp_path):
    text = bench_plots.README.read_text(encoding="utf-8")
    data = bench_plots.series(plot, text)
    assert set(data) == set(plot.columns)
    assert all(len(values) == len(plot.rows) for values in data.values())
    path = bench_plots.draw(plot, text, tmp_path)
    assert path.stat().st_size > 5000


def test_parser_on_a_known_table():
    text = ("# A\n\n## Part\n\nprose\n\n| algo | speed-up |\n|---|---|\n| PPO | **1.54x** |\n| DQN, x | 9,098/s |\n\n"
            "## Next\n")
    rows = bench_plots.table(bench_plots.section_text(text, "Part"), "| algo |")
    assert rows == [{"algo": "PPO", "speed-up": "**1.54x**"}, {"algo": "DQN, x", "speed-up": "9,098/s"}]
    assert [bench_plots.number(r["speed-up"]) for r in rows] == [1.54, 9098.0]
    with pytest.raises(ValueError, match="no heading"):
        bench_plots.section_text(text, "Missing")
    with pytest.raises(ValueError, match="no number"):
        bench_plots.number("n/a")
