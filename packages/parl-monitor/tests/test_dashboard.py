"""The Grafana dashboard shipped with the package (``parl_monitor/grafana/parl-cluster.json``): valid JSON whose
every PromQL expression names only metrics the exporter serves (``metrics.METRICS``), and it covers them: capacity
and use, actors and deaths, grant latency, per-worker load. (test_prometheus.py also runs each expression through a
real Prometheus.)"""

from __future__ import annotations

import json
import re

from parl_monitor.metrics import METRICS, grafana_dashboard

# PromQL words that are not metric names (functions are recognised by their "(", these are not)
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset", "bool",
            "inf", "nan"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(grafana_dashboard().read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    return [t["expr"] for p in panels for t in p["targets"]]


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression: identifiers that are not functions, keywords, label names (inside
    ``{...}`` or ``by (...)``) or in strings and range brackets."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word, rest = match.group(0), text[match.end():].lstrip()
        if word.lower() in KEYWORDS or rest.startswith("("):
            continue
        names.add(word)
    return names


def served(name: str) -> bool:
    listed = {n: kind for n, kind, *_ in METRICS}
    if name in listed:
        return listed[name] != "histogram"  # a histogram is queried through its series
    base = next((name[: -len(s)] for s in HISTOGRAM_SUFFIXES if name.endswith(s)), None)
    return base is not None and listed.get(base) == "histogram"


def test_metric_names_parser():
    assert metric_names('histogram_quantile(0.9, sum by (le) (rate(parl_x_bucket{a="b"}[$__rate_interval])))') \
        == {"parl_x_bucket"}
    assert metric_names("parl_a / clamp_min(parl_b, 1)") == {"parl_a", "parl_b"}


def test_every_expr_names_only_served_metrics():
    exprs = dashboard_exprs()
    assert exprs
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        unknown = sorted(n for n in names if not served(n))
        assert not unknown, f"{expr!r} names metrics the exporter does not serve: {unknown}"


def test_the_dashboard_covers_the_operators_figures():
    used = set().union(*(metric_names(e) for e in dashboard_exprs()))
    for name in ("parl_cpus", "parl_cpus_used", "parl_gpus", "parl_actors_alive", "parl_actor_deaths_total",
                 "parl_actor_grants_total", "parl_actor_grant_latency_seconds_bucket", "parl_worker_load1",
                 "parl_worker_memory_used_bytes", "parl_heartbeats_missed_total", "parl_master_resident_memory_bytes"):
        assert name in used, name
    assert any(e.startswith("histogram_quantile(") and "parl_actor_grant_latency_seconds_bucket" in e
               for e in dashboard_exprs())


def test_the_dashboard_is_valid_grafana_json():
    dashboard = json.loads(grafana_dashboard().read_text())
    assert dashboard["uid"] == "parl-cluster" and dashboard["title"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"
            assert [t["refId"] for t in panel["targets"]] == [chr(65 + i) for i in range(len(panel["targets"]))]
