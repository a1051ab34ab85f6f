"""``/metrics``: the exporter's output parsed back with prometheus_client's parser, the names against ``METRICS``,
access (token off loopback, ``METRICS_PUBLIC``), bad methods and query strings, one registry per app."""

from __future__ import annotations

import pytest
from fake_cluster import FakeCluster, sample_status
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from parl_monitor import create_app
from parl_monitor.metrics import METRICS

TOKEN = "s3cret-token"


def full_status() -> dict:
    """The fake snapshot plus what a master of this version adds: counters, process figures, counts, GPUs."""
    snapshot = sample_status()
    snapshot["gpus"] = {"total": 2, "used": 1, "vacant": 1}
    snapshot["workers"][0].update(gpus=["0", "1"], gpus_used=["1"])
    snapshot["counts"] = {"workers_unreachable": 1, "messages_received": 1234}
    snapshot["counters"] = {
        "actor_grants": 7,
        "actor_refusals": {"cpu": 3, "gpu": 0, "gpu_never": 1, "cpu_on_gpu_cluster": 0, "bad_request": 0},
        "actor_deaths": {"deleted": 2, "client_gone": 1, "worker_lost": 0, "max_memory": 0, "killed": 1, "exited": 0,
                         "other": 0},
        "heartbeats_missed": {"worker": 1, "client": 0},
        "workers_joined": 3, "workers_lost": 1, "worker_registrations_refused": 0,
        "grant_latency_s": {"buckets": [[0.005, 4], [0.5, 6], [60.0, 7], ["+Inf", 7]], "sum": 1.5, "count": 7},
    }
    snapshot["process"] = {"cpu_seconds": 12.5, "resident_memory_bytes": 50_000_000, "open_fds": 40,
                           "open_sockets": 12, "time": 0.0}
    return snapshot


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fams: dict, name: str, **labels) -> float:
    """The value of sample ``name`` with ``labels`` (``name`` as exposed: ``parl_actor_grants_total``)."""
    for family in fams.values():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise KeyError(f"{name} {labels} not served")


@pytest.fixture
def fake_full():
    return FakeCluster(full_status())


@pytest.fixture
def mclient(fake_full, monkeypatch):
    for key in [k for k in list(__import__("os").environ) if k.startswith("PARL_MONITOR_")]:
        monkeypatch.delenv(key)
    return create_app({"CLIENT": fake_full, "CACHE_TTL_S": 0.0, "TESTING": True}).test_client()


def test_metrics_parse_back_with_the_figures(mclient):
    response = mclient.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert response.headers["Cache-Control"] == "no-store"
    fams = families(response.text)
    assert value(fams, "parl_master_up") == 1
    assert value(fams, "parl_workers") == 2
    assert value(fams, "parl_workers_unreachable") == 1
    assert value(fams, "parl_clients") == 2
    assert (value(fams, "parl_cpus"), value(fams, "parl_cpus_used")) == (6, 2)
    assert (value(fams, "parl_gpus"), value(fams, "parl_gpus_used")) == (2, 1)
    assert value(fams, "parl_actors_alive") == 2
    assert fams["parl_actor_grants"].type == "counter"
    assert value(fams, "parl_actor_grants_total") == 7
    assert value(fams, "parl_actor_refusals_total", reason="cpu") == 3
    assert value(fams, "parl_actor_refusals_total", reason="gpu_never") == 1
    assert value(fams, "parl_actor_deaths_total", cause="killed") == 1
    assert value(fams, "parl_actor_deaths_total", cause="deleted") == 2
    assert value(fams, "parl_heartbeats_missed_total", peer="worker") == 1
    assert fams["parl_actor_grant_latency_seconds"].type == "histogram"
    assert value(fams, "parl_actor_grant_latency_seconds_bucket", le="0.005") == 4
    assert value(fams, "parl_actor_grant_latency_seconds_bucket", le="+Inf") == 7
    assert value(fams, "parl_actor_grant_latency_seconds_count") == 7
    assert value(fams, "parl_actor_grant_latency_seconds_sum") == 1.5
    assert value(fams, "parl_master_cpu_seconds_total") == 12.5
    assert value(fams, "parl_master_resident_memory_bytes") == 50_000_000
    assert value(fams, "parl_master_open_sockets") == 12
    assert value(fams, "parl_master_messages_received_total") == 1234
    assert value(fams, "parl_worker_load1", worker="w-bbb", host="10.0.0.7") == 1.25
    assert value(fams, "parl_worker_memory_used_bytes", worker="w-aaa") == 1200 * 1024 * 1024
    assert value(fams, "parl_worker_memory_total_bytes", worker="w-bbb") == 8000 * 1024 * 1024
    assert value(fams, "parl_worker_gpus_used", worker="w-aaa") == 1


def exposed_names(fams: dict) -> set[str]:
    """The names as ``METRICS`` lists them: a counter's with ``_total``, a histogram's family name."""
    return {name + "_total" if f.type == "counter" else name for name, f in fams.items()}


def test_every_listed_metric_is_served_and_nothing_else(mclient):
    mclient.get("/")  # a request, so that the monitor's own histogram has a sample
    fams = families(mclient.get("/metrics").text)
    served = exposed_names(fams) - {"parl_monitor_request_duration_seconds_created"}
    assert served == {name for name, *_ in METRICS}
    for name, kind, unit, labels, _ in METRICS:
        family = fams[name.removesuffix("_total")]
        assert family.type == kind, name
        assert name.startswith("parl_")
        assert not unit or unit in name, f"{name}: its unit ({unit}) is not in its name"
        for sample in family.samples:
            assert set(labels) <= set(sample.labels), (name, sample.labels)


def test_monitor_request_latency_is_counted_by_endpoint(mclient):
    for _ in range(3):
        assert mclient.get("/api/overview").status_code == 200
    mclient.get("/no/such/page")
    fams = families(mclient.get("/metrics").text)
    assert value(fams, "parl_monitor_request_duration_seconds_count", endpoint="api.overview") == 3
    assert value(fams, "parl_monitor_request_duration_seconds_count", endpoint="none") == 1


def test_a_master_of_an_earlier_version_still_gives_the_rest(monkeypatch):
    app = create_app({"CLIENT": FakeCluster(sample_status()), "CACHE_TTL_S": 0.0})  # no counters, no process
    fams = families(app.test_client().get("/metrics").text)
    assert value(fams, "parl_workers") == 2
    assert "parl_actor_grants" not in fams and "parl_master_resident_memory_bytes" not in fams


def test_a_down_master_is_up_0_and_the_scrape_succeeds(mclient, fake_full):
    fake_full.fail = ConnectionError("refused")
    response = mclient.get("/metrics")
    assert response.status_code == 200
    fams = families(response.text)
    assert value(fams, "parl_master_up") == 0
    assert "parl_workers" not in fams


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
def test_other_methods_are_405_as_plain_text(mclient, method):
    response = getattr(mclient, method)("/metrics")
    assert response.status_code == 405
    assert response.mimetype == "text/plain"
    assert "GET" in response.headers["Allow"]
    assert "405 Method Not Allowed" in response.text


def test_head_is_answered(mclient):
    response = mclient.head("/metrics")
    assert response.status_code == 200 and response.data == b""


def test_query_strings(mclient):
    fams = families(mclient.get("/metrics?name[]=parl_workers&name[]=parl_actor_grants_total").text)
    assert set(fams) == {"parl_workers", "parl_actor_grants"}
    # parameters /metrics does not take are ignored, as on every route; odd values do no harm
    for query in ("offset=abc", "name=parl_workers", "name[]=", "name[]=no_such_metric", "x=%ff%00", "fragment=1"):
        response = mclient.get(f"/metrics?{query}")
        assert response.status_code == 200, query
        text_string_to_metric_families(response.text)  # still the Prometheus text format
    assert families(mclient.get("/metrics?name[]=no_such_metric").text) == {}


def test_metrics_path_variants_are_not_the_exporter(mclient):
    assert mclient.get("/metrics/").status_code == 404
    assert mclient.get("/metrics/x").status_code == 404


def guarded_app(fake, **extra):
    return create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "HOST": "10.1.2.3", "TOKEN": TOKEN, **extra})


def test_off_loopback_the_token_is_required(fake_full):
    client = guarded_app(fake_full).test_client()
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused.mimetype == "text/plain"
    assert "Authorization: Bearer" in refused.text
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and value(families(ok.text), "parl_workers") == 2
    by_query = guarded_app(fake_full).test_client().get(f"/metrics?token={TOKEN}")
    assert by_query.status_code == 200  # answered at once: a scraper keeps no cookie to follow a redirect with


def test_metrics_public_opens_metrics_only(fake_full):
    client = guarded_app(fake_full, METRICS_PUBLIC=True).test_client()
    assert client.get("/metrics").status_code == 200
    assert client.get("/api/status").status_code == 401
    assert client.get("/").status_code == 401


def test_loopback_metrics_need_no_token_but_a_loopback_host(fake_full):
    client = create_app({"CLIENT": fake_full, "TOKEN": TOKEN}).test_client()
    assert client.get("/metrics").status_code == 200
    foreign = client.get("/metrics", headers={"Host": "evil.example:8110"})
    assert foreign.status_code == 400 and foreign.mimetype == "text/plain"


def test_each_app_has_its_own_registry(fake_full):
    a = create_app({"CLIENT": fake_full, "CACHE_TTL_S": 0.0}).test_client()
    b = create_app({"CLIENT": FakeCluster(), "CACHE_TTL_S": 0.0}).test_client()
    for _ in range(2):
        a.get("/api/status")
    fa, fb = families(a.get("/metrics").text), families(b.get("/metrics").text)
    assert value(fa, "parl_monitor_request_duration_seconds_count", endpoint="api.status") == 2
    with pytest.raises(KeyError):
        value(fb, "parl_monitor_request_duration_seconds_count", endpoint="api.status")
    assert not [n for n in REGISTRY._names_to_collectors if n.startswith("parl_")]  # the global registry is untouched


def test_cli_has_metrics_public():
    from click.testing import CliRunner

    from parl_monitor.cli import main

    result = CliRunner().invoke(main, ["--help"])
    assert "--metrics-public" in result.output


def readme_metrics_table() -> list[list[str]]:
    """The rows of the metrics table in the README's "Operating a cluster" section: ``[name, type, unit, labels,
    meaning]``."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text[text.index("## Operating a cluster"):]
    section = section[: section.index("\n## ", 1)]
    start = section.index("| name | type | unit | labels | meaning |")
    rows = []
    for line in section[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_every_metric_in_the_readme_is_served(mclient):
    mclient.get("/")
    fams = families(mclient.get("/metrics").text)
    served = exposed_names(fams)
    rows = readme_metrics_table()
    assert len(rows) >= 30
    listed = {name: (kind, unit, labels) for name, kind, unit, labels, _ in METRICS}
    for name, kind, unit, labels, meaning in rows:
        name = name.strip("`")
        assert name in served, f"the README lists {name}, which /metrics does not serve"
        assert listed[name][0] == kind and (listed[name][1] or "-") == unit, name
        assert [x.strip("`") for x in labels.split(", ")] == list(listed[name][2] or ["-"]), name
        assert meaning
    assert {r[0].strip("`") for r in rows} == set(listed)  # and the README lists every one


class MetricsAwareCluster(FakeCluster):
    """A status client with the ``metrics=True`` option of ``parl_remote.ClusterClient``: its light reply has no
    client or actor lists, their counts instead."""

    def __init__(self, snapshot: dict) -> None:
        super().__init__(snapshot)
        self.asked: list[str] = []

    def status(self, summary: bool = False, metrics: bool = False) -> dict:
        self.asked.append("metrics" if metrics else "full")
        snapshot = super().status()
        if metrics:
            alive = sum(a["state"] == "alive" for a in snapshot.pop("actors"))
            snapshot["counts"].update(clients=len(snapshot.pop("clients")), actors_alive=alive, actors_unreachable=0)
        return snapshot


def test_scrapes_read_the_light_reply_and_reuse_a_fresh_page_snapshot():
    now = [100.0]
    fake = MetricsAwareCluster(full_status())
    app = create_app({"CLIENT": fake, "CACHE_TTL_S": 1.0, "TESTING": True})
    app.extensions["parl_monitor"]._clock = lambda: now[0]
    client = app.test_client()
    fams = families(client.get("/metrics").text)
    assert fake.asked == ["metrics"]
    assert (value(fams, "parl_actors_alive"), value(fams, "parl_clients"), value(fams, "parl_workers")) == (2, 2, 2)
    client.get("/metrics")
    assert fake.asked == ["metrics"]  # within CACHE_TTL_S: not asked again
    now[0] += 2
    client.get("/api/overview")  # a page reads the full snapshot ...
    assert fake.asked == ["metrics", "full"]
    assert value(families(client.get("/metrics").text), "parl_actors_alive") == 2
    assert fake.asked == ["metrics", "full"]  # ... which the next scrape reuses while it is fresh
    now[0] += 2
    client.get("/metrics")
    assert fake.asked == ["metrics", "full", "metrics"]
