"""docs/_ext/atari_results.py: every row of the Results page has its committed runs and draws; a row whose data is
missing or damaged fails (so the build does), with the file named."""

from __future__ import annotations

import dataclasses
import json

import atari_results
import pytest


@pytest.mark.parametrize("row", atari_results.ROWS, ids=lambda r: r.key)
def test_every_row_has_its_runs(row):
    for series in row.series:
        runs = atari_results.load_runs(series.folder)
        for run in runs:
            assert run.steps == sorted(run.steps) and len(run.steps) == len(run.scores) == len(run.game_wall_s)
            assert not run.summary or run.summary["env_steps"] >= run.steps[-1]
            for record in run.records:
                assert isinstance(record["returncode"], int) and record["commit"] and record["cpu_s"] > 0


def test_rows_draw_and_render(tmp_path):
    paths = atari_results.plot_rows(tmp_path)
    assert [p.name for p in paths] == [f"{row.key}.png" for row in atari_results.ROWS]
    assert all(p.stat().st_size > 10_000 for p in paths)
    text = atari_results.render()
    for row in atari_results.ROWS:
        assert f"## {row.key}: {row.title}" in text and f"/_generated/results/{row.key}.png" in text
    for key, _, _ in atari_results.PLANNED:
        assert f"| {key} |" in text and "not run yet" in text


def _write_run(folder, rows, summary=True, record=True):
    folder.mkdir(parents=True)
    (folder / "curve.csv").write_text("env_steps,wall_s,episode_return\n" + "".join(f"{s},{w},{r}\n"
                                                                                  for s, w, r in rows))
    if summary:
        (folder / "summary.json").write_text(json.dumps({"env_steps": rows[-1][0] if rows else 0}))
    if record:
        (folder / "run.json").write_text(json.dumps({"wall_s": 60.0, "returncode": 0, "commit": "abc",
                                                     "cpu_s": 1.0, "loadavg_1m": {"median": 1.0},
                                                     "start_utc": "2026-01-01T00:00:00+00:00"}))


def test_running_mean_and_budget_point(tmp_path, monkeypatch):
    monkeypatch.setattr(atari_results, "ROOT", tmp_path)
    games = [(1000 * (i + 1), 10.0 * i, -21.0 if i < 100 else 21.0) for i in range(150)]
    _write_run(tmp_path / "r" / "seed0", games)
    (run,) = atari_results.load_runs("r")
    means = run.running_mean()
    assert means[0] == -21.0 and means[99] == -21.0 and means[149] == pytest.approx((50 * -21 + 50 * 21) / 100)
    assert run.at(100_500) == (-21.0, 990.0, 100_000)  # the last game within the budget
    assert run.at(500) is None


@pytest.mark.parametrize("damage, message", [
    ("no_folder", "no seed\\*/ run folder"),
    ("no_record", "missing run.json"),
    ("no_games", "no finished game"),
])
def test_missing_or_damaged_data_fails_naming_the_file(tmp_path, monkeypatch, damage, message):
    monkeypatch.setattr(atari_results, "ROOT", tmp_path)
    if damage == "no_record":
        _write_run(tmp_path / "r" / "seed0", [(1000, 1.0, -21.0)], record=False)
    elif damage == "no_games":
        _write_run(tmp_path / "r" / "seed0", [])
    row = dataclasses.replace(atari_results.ROWS[0], series=(atari_results.Series("x", "r"),))
    monkeypatch.setattr(atari_results, "ROWS", (row,))
    with pytest.raises(ValueError, match=message):
        atari_results.render()
    with pytest.raises(ValueError, match=message):
        atari_results.plot_rows(tmp_path / "out")


def test_a_resumed_run_sums_its_records_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(atari_results, "ROOT", tmp_path)
    _write_run(tmp_path / "r" / "seed0", [(1000, 1.0, -21.0), (2000, 80.0, -20.0)])
    (tmp_path / "r" / "seed0" / "run-resume-1.json").write_text(json.dumps({
        "wall_s": 120.0, "returncode": 0, "commit": "def", "cpu_s": 3.0, "loadavg_1m": {"median": 2.5},
        "start_utc": "2026-01-02T00:00:00+00:00", "note": "on another day"}))
    (run,) = atari_results.load_runs("r")
    assert (run.wall_s, run.cpu_s, run.record["commit"]) == (180.0, 4.0, "def")
    row = dataclasses.replace(atari_results.ROWS[0], series=(atari_results.Series("x", "r"),))
    monkeypatch.setattr(atari_results, "ROWS", (row,))
    text = atari_results.render()
    assert "| 3 min | 1.0 / 2.5 | 4 | `abc` / `def` | 2026-01-01 00:00 |" in text
    assert "continued 1 time(s) with --resume; on another day" in text
    (tmp_path / "r" / "seed0" / "run-resume-3.json").write_text("{}")  # a gap: run-resume-2.json is missing
    with pytest.raises(ValueError, match="continuation records must be"):
        atari_results.load_runs("r")


def test_the_summary_line_shows_the_configuration_best_at_parls_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(atari_results, "ROOT", tmp_path)
    budget = atari_results.ROWS[0].parl_budget
    # "long": went furthest, but scores -20 at PARL's budget; "good": +19 there; "short": stopped far before it
    _write_run(tmp_path / "long" / "seed0", [(int(budget * f), 60.0 * f, -20.0) for f in (0.5, 1.0, 2.0)])
    _write_run(tmp_path / "good" / "seed0", [(int(budget * f), 60.0 * f, 19.0) for f in (0.5, 1.0)])
    _write_run(tmp_path / "short" / "seed0", [(1000, 1.0, 21.0)])
    series = tuple(atari_results.Series(name, name) for name in ("long", "short", "good"))
    monkeypatch.setattr(atari_results, "ROWS", (dataclasses.replace(atari_results.ROWS[0], series=series),))
    summary_line = atari_results.render().splitlines()[2]
    assert "+19.0 (good)" in summary_line
    # no configuration at PARL's budget: the one that went furthest stands for the row
    series = tuple(atari_results.Series(name, name) for name in ("short",))
    monkeypatch.setattr(atari_results, "ROWS", (dataclasses.replace(atari_results.ROWS[0], series=series),))
    assert "run to 0.0M only (short)" in atari_results.render().splitlines()[2]
