"""Flask test-client tests of every view and API route against a fake cluster (a ``StatusClient``)."""

from __future__ import annotations

import re
import urllib.parse

import pytest
from fake_cluster import T0, FakeCluster, sample_status

from parl_monitor import ClusterUnavailableError, MonitorState, create_app
from parl_monitor.app import format_ago, format_time


def text(resp) -> str:
    return resp.get_data(as_text=True)


# ---------------------------------------------------------------- overview
def test_overview_api_figures(client):
    body = client.get("/api/overview").get_json()
    assert body["cpus"] == {"total": 6, "used": 2, "vacant": 4}
    assert body["memory"] == {"total_mb": 32000.0, "used_mb": 3200.0, "vacant_mb": 28800.0}
    assert body["counts"] == {"workers": 2, "clients": 2, "actors": 3, "actors_alive": 2, "actors_dead": 1,
                              "errors": 1}
    assert [w["id"] for w in body["workers"]] == ["w-aaa", "w-bbb"]
    assert body["workers"][0]["cpus_vacant"] == 2 and body["workers"][0]["memory_percent"] == 5.0
    assert body["workers"][0]["actors"] == 2 and body["workers"][1]["actors"] == 0  # a-3 on w-bbb is dead
    assert [c["actors_alive"] for c in body["clients"]] == [2, 0]
    assert body["master"]["address"] == "127.0.0.1:8010"


def test_overview_page_shows_the_figures(client):
    resp = client.get("/")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    html = text(resp)
    assert '<span data-field="cpus.total">6</span>' in html
    assert '<span data-field="cpus.used">2</span>' in html
    assert '<span data-field="cpus.vacant">4</span>' in html
    assert '<span data-field="memory.used_mb">3200 MB</span>' in html
    assert '<span data-field="memory.total_mb">32000 MB</span>' in html
    assert '<p class="big" data-field="counts.workers">2</p>' in html
    assert '<p class="big" data-field="counts.clients">2</p>' in html
    for ident in ("w-aaa", "w-bbb", "c-111", "c-222", "a-1", "a-2", "a-3"):
        assert f'data-id="{ident}"' in html
    assert "/home/v/eval.py" in html and "0.50 / 0.40 / 0.30" in html
    assert 'src="/static/monitor.js"' in html and 'href="/static/monitor.css"' in html
    assert resp.headers["Cache-Control"] == "no-store"


def test_fragment_is_only_the_live_part(client):
    html = text(client.get("/?fragment=1"))
    assert "<html" not in html and 'data-field="cpus.total">6<' in html


def test_status_api_is_the_snapshot(client, fake):
    assert client.get("/api/status").get_json() == fake.snapshot


def test_api_index_lists_routes(client):
    routes = client.get("/api/").get_json()["routes"]
    for route in ("/api/overview", "/api/workers/<worker_id>/history", "/api/actors/<actor_id>/log",
                  "/api/actors/<actor_id>/log/download", "/api/errors"):
        assert route in routes


# ---------------------------------------------------------------- workers
def test_workers_api_and_worker_page(client):
    workers = client.get("/api/workers").get_json()["workers"]
    assert [(w["id"], w["cpus_used"], w["cpus_vacant"]) for w in workers] == [("w-aaa", 2, 2), ("w-bbb", 0, 2)]
    body = client.get("/api/workers/w-bbb").get_json()
    assert body["worker"]["memory_percent"] == 25.0
    assert [a["id"] for a in body["actors"]] == ["a-3"]
    html = text(client.get("/workers/w-bbb"))
    assert '<span data-field="memory_used_mb">2000 MB</span>' in html
    assert '<span data-field="memory_percent">25.0</span>' in html
    assert '1.25 / 1.00 / 0.75' in html
    assert 'data-history-url="/api/workers/w-bbb/history"' in html


def test_worker_history_is_sampled_and_bounded(fake):
    app = create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "HISTORY_INTERVAL_S": 0.0, "HISTORY_SIZE": 3})
    c = app.test_client()
    for used in (1, 2, 3, 4, 0):
        fake.snapshot["workers"][0]["cpus_used"] = used
        fake.snapshot["workers"][0]["load_avg"] = [used / 2, 0.0, 0.0]
        c.get("/api/overview")
    samples = c.get("/api/workers/w-aaa/history").get_json()["samples"]
    # 6 reads of the status (5 + the history call itself), bounded to the last 3 samples
    assert [s["cpus_used"] for s in samples] == [4, 0, 0]
    assert [s["load_1m"] for s in samples] == [2.0, 0.0, 0.0]
    assert samples[0]["memory_total_mb"] == 24000.0 and samples[0]["time"] <= samples[-1]["time"]


def test_history_interval_limits_sampling():
    now = [100.0]
    st = MonitorState(FakeCluster(), cache_ttl_s=0.0, history_interval_s=5.0, clock=lambda: now[0])
    for t in (100.0, 101.0, 104.9, 105.0, 112.0):
        now[0] = t
        st.status()
    assert [s["time"] for s in st.history("w-aaa")] == [100.0, 105.0, 112.0]


def test_status_cache_ttl_and_refresh_after_kill():
    now = [0.0]
    fake = FakeCluster()
    st = MonitorState(fake, cache_ttl_s=1.0, clock=lambda: now[0])
    st.status()
    fake.kill_actor("a-1")
    now[0] = 0.5
    assert st.status()["cpus"]["used"] == 2 and fake.status_calls == 1  # cached
    now[0] = 1.01
    snap = st.status()  # the cache is short: the kill shows after at most cache_ttl_s
    assert snap["cpus"]["used"] == 1 and fake.status_calls == 2
    assert {a["id"]: a["state"] for a in snap["actors"]}["a-1"] == "dead"


# ---------------------------------------------------------------- clients
def test_clients_api_and_client_page(client):
    clients = client.get("/api/clients").get_json()["clients"]
    assert [(c["id"], c["script"]) for c in clients] == [("c-111", "/home/u/train.py"), ("c-222", "/home/v/eval.py")]
    body = client.get("/api/clients/c-111").get_json()
    assert body["client"]["host"] == "127.0.0.1"
    assert [a["id"] for a in body["actors"]] == ["a-1", "a-2"] and body["missing_actors"] == []
    html = text(client.get("/clients/c-111"))
    assert "<code>/home/u/train.py</code>" in html
    assert f'<dd data-field="started_at">{format_time(T0 + 10)}</dd>' in html
    assert '<dd data-field="actors">2</dd>' in html
    assert 'data-id="a-1"' in html and 'data-id="a-2"' in html and 'data-id="a-3"' not in html


def test_client_page_reports_actors_the_master_dropped(client, fake):
    fake.snapshot["clients"][0]["actors"].append("a-gone")
    body = client.get("/api/clients/c-111").get_json()
    assert body["missing_actors"] == ["a-gone"]
    assert "no longer listed by the master: a-gone" in text(client.get("/clients/c-111"))


# ---------------------------------------------------------------- actors and errors
def test_actor_api_and_page_with_error(client):
    body = client.get("/api/actors/a-2").get_json()
    assert body["actor"]["last_error"]["type"] == "ZeroDivisionError"
    assert body["client"]["id"] == "c-111" and body["worker"]["id"] == "w-aaa"
    html = text(client.get("/actors/a-2"))
    assert '<strong data-field="last_error.type">ZeroDivisionError</strong>' in html
    assert '<span data-field="last_error.message">division by zero</span>' in html
    assert "return 1 / 0" in html and '<dd data-field="pid">301</dd>' in html
    assert 'data-log-url="/api/actors/a-2/log"' in html and 'href="/api/actors/a-2/log/download"' in html


def test_dead_actor_page_shows_cause(client):
    html = text(client.get("/actors/a-3"))
    assert '<span class="badge state-dead" data-field="state">dead</span>' in html
    assert '<span class="cause" data-field="death_cause">killed by signal 9</span>' in html
    assert f'<dd data-field="ended_at">{format_time(T0 + 40)}</dd>' in html


def test_actors_api_lists_all(client):
    assert [a["id"] for a in client.get("/api/actors").get_json()["actors"]] == ["a-1", "a-2", "a-3"]


def test_errors_api_and_page(client, fake):
    fake.snapshot["actors"][2]["last_error"] = {"type": "ValueError", "message": "bad", "traceback": "TB",
                                                "time": T0 + 50}
    rows = client.get("/api/errors").get_json()["errors"]
    assert [(r["actor_id"], r["type"]) for r in rows] == [("a-3", "ValueError"), ("a-2", "ZeroDivisionError")]
    html = text(client.get("/errors"))
    assert '<span data-field="errors.count">2</span>' in html and "division by zero" in html


def test_killed_actor_shows_new_state_at_once(client, fake):
    assert client.get("/api/overview").get_json()["counts"]["actors_alive"] == 2
    fake.kill_actor("a-1")
    body = client.get("/api/overview").get_json()
    assert body["cpus"] == {"total": 6, "used": 1, "vacant": 5}
    assert body["counts"]["actors_alive"] == 1 and body["counts"]["actors_dead"] == 2
    assert '<span class="badge state-dead" data-field="state">dead</span>' in text(client.get("/actors/a-1"))


# ---------------------------------------------------------------- logs
def test_log_reads_from_offset(client, fake):
    body = client.get("/api/actors/a-1/log").get_json()
    assert body == {"actor_id": "a-1", "offset": 0, "next_offset": 14, "data": "step 1\nstep 2\n", "eof": False}
    assert client.get("/api/actors/a-1/log?offset=14").get_json()["eof"] is True
    fake.append_log("a-1", b"step 3\n")  # live tail: new lines show from the last offset
    body = client.get("/api/actors/a-1/log?offset=14").get_json()
    assert body["data"] == "step 3\n" and body["next_offset"] == 21
    assert client.get("/api/actors/a-1/log?offset=7&max_bytes=3").get_json()["data"] == "ste"


def test_log_keeps_utf8_characters_whole(client, fake):
    raw = fake.logs["a-2"]
    # "h\xc3\xa9": a 2-byte read cuts the é in two; the API returns "h" and an offset before the cut.
    body = client.get("/api/actors/a-2/log?max_bytes=2").get_json()
    assert body["data"] == "h" and body["next_offset"] == 1
    body = client.get("/api/actors/a-2/log?offset=1&max_bytes=2").get_json()
    assert body["data"] == "é" and body["next_offset"] == 3
    out, off = "", 0
    while True:
        b = client.get(f"/api/actors/a-2/log?offset={off}&max_bytes=5").get_json()
        if b["eof"]:
            break
        out, off = out + b["data"], b["next_offset"]
    assert out == raw.decode()


def test_log_negative_offset_reads_the_tail(client, fake):
    body = client.get("/api/actors/a-1/log?offset=-7").get_json()  # "step 1\nstep 2\n": the last 7 bytes
    assert body == {"actor_id": "a-1", "offset": 7, "next_offset": 14, "data": "step 2\n", "eof": False}
    body = client.get("/api/actors/a-1/log?offset=-1000").get_json()  # more than the log: from the start
    assert body["offset"] == 0 and body["data"] == "step 1\nstep 2\n"
    raw = fake.logs["a-2"]  # "h\xc3\xa9...": a tail that starts inside the é skips its continuation byte
    body = client.get(f"/api/actors/a-2/log?offset=-{len(raw) - 2}").get_json()
    assert body["offset"] == 3 and body["data"] == raw[3:].decode()


def test_log_bad_parameters(client):
    assert client.get("/api/actors/a-1/log?offset=x").status_code == 400
    resp = client.get("/api/actors/a-1/log?max_bytes=100000000")
    assert resp.status_code == 400 and "max_bytes" in resp.get_json()["message"]


def test_log_download(fake):
    fake.logs["a-1"] = b"".join(b"line %d\n" % i for i in range(5000))
    app = create_app({"CLIENT": fake, "LOG_CHUNK_BYTES": 1000, "PUBLIC": True})
    resp = app.test_client().get("/api/actors/a-1/log/download")
    assert resp.status_code == 200 and resp.mimetype == "text/plain"
    assert resp.headers["Content-Disposition"] == 'attachment; filename="a-1.log"'
    assert resp.data == fake.logs["a-1"]


def test_log_of_actor_unknown_to_the_log_store_is_404(client, fake):
    del fake.logs["a-1"]
    resp = client.get("/api/actors/a-1/log")
    assert resp.status_code == 404 and resp.get_json()["error"] == "not_found"


# ---------------------------------------------------------------- not found and traversal
@pytest.mark.parametrize("path", ["/workers/w-zzz", "/clients/c-zzz", "/actors/a-zzz", "/api/workers/w-zzz",
                                  "/api/workers/w-zzz/history", "/api/clients/c-zzz", "/api/actors/a-zzz",
                                  "/api/actors/a-zzz/log", "/api/actors/a-zzz/log/download", "/no/such/page"])
def test_unknown_ids_are_404(client, path):
    resp = client.get(path)
    assert resp.status_code == 404
    if path.startswith("/api/"):
        assert resp.get_json()["error"] == "not_found"
    else:
        assert "404" in text(resp)


TRAVERSALS = [
    "/api/actors/..%2F..%2F..%2Fetc%2Fpasswd/log",
    "/api/actors/%2e%2e%2f%2e%2e%2fetc%2fpasswd/log",
    "/api/actors/../../etc/passwd/log",
    "/api/actors/..%5C..%5Cwindows/log",
    "/api/actors/....//etc/passwd/log",
    "/api/actors/a-1%2F..%2F..%2Fetc%2Fpasswd/log",
    "/api/actors/a-1/log?offset=0&path=/etc/passwd",
    "/api/actors/%2Fetc%2Fpasswd/log/download",
    "/actors/..%2F..%2Fetc%2Fpasswd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_path_traversal_is_refused(client, fake, path):
    resp = client.get(path)
    body = resp.get_data()
    assert b"root:" not in body
    if "path=" in path:  # extra parameters are ignored: the log is addressed by the actor id only
        assert resp.status_code == 200 and resp.get_json()["data"] == "step 1\nstep 2\n"
        assert fake.log_calls == [("a-1", 0, 65536)]
    else:
        assert resp.status_code in (404, 308), (path, resp.status_code)
        assert fake.log_calls == []  # no read was attempted for anything but a listed actor id


def test_a_listed_id_with_dots_is_still_refused(fake):
    """Even if a (broken) master listed an id like '../x', the monitor never asks for its log."""
    fake.snapshot["actors"][0]["id"] = "../x"
    c = create_app({"CLIENT": fake}).test_client()
    assert c.get("/api/actors/" + urllib.parse.quote("../x", safe="") + "/log").status_code == 404
    assert fake.log_calls == []


# ---------------------------------------------------------------- cluster failures
def test_cluster_unavailable_is_503(client, fake):
    fake.fail = ConnectionError("connection refused")
    resp = client.get("/api/overview")
    assert resp.status_code == 503
    msg = resp.get_json()["message"]
    assert "ConnectionError: connection refused" in msg and "xparl status" in msg
    resp = client.get("/")
    assert resp.status_code == 503 and "Cluster unavailable" in text(resp)
    fake.fail = None
    assert client.get("/").status_code == 200  # recovers on the next poll


def test_monitor_state_needs_a_cluster():
    with pytest.raises(ValueError, match="address='host:port'"):
        MonitorState()
    with pytest.raises(ValueError, match="history_size"):
        MonitorState(FakeCluster(), history_size=0)


def test_bad_status_type_is_reported():
    class Broken(FakeCluster):
        def status(self):
            return ["not", "a", "dict"]

    with pytest.raises(ClusterUnavailableError, match="returned list"):
        MonitorState(Broken()).status()


# ---------------------------------------------------------------- security
def test_loopback_needs_no_token(client):
    assert client.get("/api/overview").status_code == 200


def test_non_loopback_without_token_refuses_to_start(fake):
    with pytest.raises(ValueError, match="requires the cluster token"):
        create_app({"CLIENT": fake, "HOST": "0.0.0.0"})


@pytest.fixture
def guarded(fake):
    return create_app({"CLIENT": fake, "HOST": "0.0.0.0", "TOKEN": "s3cret"}).test_client()


@pytest.mark.parametrize("path", ["/", "/workers/w-aaa", "/clients/c-111", "/actors/a-1", "/errors",
                                  "/api/", "/api/status", "/api/overview", "/api/workers", "/api/workers/w-aaa",
                                  "/api/workers/w-aaa/history", "/api/clients", "/api/clients/c-111", "/api/actors",
                                  "/api/actors/a-1", "/api/errors", "/api/actors/a-1/log",
                                  "/api/actors/a-1/log/download"])
def test_every_route_refuses_without_token(guarded, fake, path):
    resp = guarded.get(path)
    assert resp.status_code == 401
    assert b"w-aaa" not in resp.data and b"step 1" not in resp.data
    if path.startswith("/api"):
        assert resp.get_json()["error"] == "unauthorized"
    resp = guarded.get(path, headers={"Authorization": "Bearer wrong"})
    assert resp.status_code == 401
    assert guarded.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert fake.log_calls == [] or path.endswith(("/log", "/download"))


def test_token_query_sets_a_session_cookie(guarded):
    assert guarded.get("/?token=wrong").status_code == 401
    resp = guarded.get("/actors/a-1?token=s3cret&x=1")
    assert resp.status_code == 302 and resp.headers["Location"] == "/actors/a-1?x=1"
    assert "HttpOnly" in resp.headers["Set-Cookie"]
    assert guarded.get("/").status_code == 200  # the cookie now grants access
    assert guarded.get("/api/overview").status_code == 200


def test_health_and_static_need_no_token(guarded):
    assert guarded.get("/healthz").get_json() == {"ok": True}
    assert guarded.get("/static/monitor.js").status_code == 200


def test_force_require_token_on_loopback(fake):
    c = create_app({"CLIENT": fake, "REQUIRE_TOKEN": True, "TOKEN": "t"}).test_client()
    assert c.get("/").status_code == 401


# ---------------------------------------------------------------- assets and config
def test_assets_are_local(client):
    for name in ("monitor.js", "monitor.css"):
        resp = client.get(f"/static/{name}")
        assert resp.status_code == 200 and len(resp.data) > 1000
        resp.close()
    for path in ("/", "/workers/w-aaa", "/clients/c-111", "/actors/a-2", "/errors"):
        html = text(client.get(path))
        assert not re.search(r"""(src|href)=["'](https?:)?//""", html), path  # no CDN, nothing remote


def test_env_prefix_config(monkeypatch, fake):
    monkeypatch.setenv("PARL_MONITOR_ADDRESS", "127.0.0.1:9999")
    monkeypatch.setenv("PARL_MONITOR_TOKEN", "12345")  # JSON-looking values are still strings
    monkeypatch.setenv("PARL_MONITOR_REFRESH_S", "0.5")
    app = create_app({"CLIENT": fake})
    assert app.config["TOKEN"] == "12345" and app.config["REFRESH_S"] == 0.5
    assert app.extensions["parl_monitor"].address == "127.0.0.1:9999"
    assert app.extensions["parl_monitor"].client is fake
    assert 'data-refresh-ms="500"' in text(app.test_client().get("/"))


def test_bad_config_number(fake):
    with pytest.raises(ValueError, match="numbers are expected"):
        create_app({"CLIENT": fake, "CACHE_TTL_S": "soon"})


def test_client_can_be_swapped_in_extensions(app):
    other = FakeCluster(sample_status())
    other.snapshot["cpus"]["total"] = 99
    app.extensions["parl_monitor"].client = other
    assert app.test_client().get("/api/overview").get_json()["cpus"]["total"] == 99


def test_time_filters():
    assert format_time(0) == "1970-01-01 00:00:00 UTC" and format_time(None) == "-"
    assert format_ago(100.0, now=3823.0) == "1h 2m 3s" and format_ago(100.0, now=105.0) == "5s"


def test_lost_worker_disappears_at_once(client, fake):
    assert client.get("/workers/w-bbb").status_code == 200
    lost = fake.snapshot["workers"].pop(1)  # the master dropped a worker that stopped heartbeating
    fake.snapshot["cpus"]["total"] -= lost["cpus_total"]
    fake.snapshot["cpus"]["vacant"] -= lost["cpus_total"] - lost["cpus_used"]
    body = client.get("/api/overview").get_json()
    assert body["counts"]["workers"] == 1 and body["cpus"] == {"total": 4, "used": 2, "vacant": 2}
    assert body["memory"]["total_mb"] == 24000.0
    assert client.get("/workers/w-bbb").status_code == 404
    assert client.get("/workers/w-bbb?fragment=1").status_code == 404  # the page's script shows a banner


def test_foreign_host_header_is_refused_on_loopback(client):
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 gets nothing."""
    assert client.get("/api/overview", headers={"Host": "evil.example:8110"}).status_code == 400
    assert client.get("/api/overview", headers={"Host": "127.0.0.1:8110"}).status_code == 200
    assert client.get("/", headers={"Host": "localhost:8110"}).status_code == 200
    assert client.get("/", headers={"Host": "[::1]:8110"}).status_code == 200  # as the README lists it
    assert client.get("/api/overview", headers={"Host": "[::1]"}).status_code == 200
    assert client.get("/", headers={"Host": "[::2]:8110"}).status_code == 400
    assert client.get("/", headers={"Host": "127.0.0.1.evil.example"}).status_code == 400


def test_session_cookie_is_same_site_strict(fake, monkeypatch):
    from parl_monitor.app import create_app

    app = create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "HISTORY_INTERVAL_S": 0.0, "TESTING": True,
                      "TOKEN": "t", "REQUIRE_TOKEN": True})  # fmt: skip
    resp = app.test_client().get("/?token=t")
    assert resp.status_code == 302
    assert "SameSite=Strict" in resp.headers["Set-Cookie"] and "HttpOnly" in resp.headers["Set-Cookie"]


def test_values_are_html_escaped(client, fake):
    fake.snapshot["actors"][0]["class_name"] = "<script>alert(1)</script>"
    fake.snapshot["clients"][0]["script"] = '/x/"><img src=x onerror=alert(1)>.py'
    html = text(client.get("/"))
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html


def test_client_is_never_used_from_two_threads_at_once():
    """A zmq-based client is not thread-safe: the poller and the requests take turns."""
    import threading
    import time as _time

    class Exclusive(FakeCluster):
        def __init__(self):
            super().__init__()
            self.busy = threading.Lock()
            self.overlaps = 0

        def _enter(self):
            if not self.busy.acquire(blocking=False):
                self.overlaps += 1
                self.busy.acquire()
            _time.sleep(0.002)
            self.busy.release()

        def status(self):
            self._enter()
            return super().status()

        def actor_log(self, actor_id, offset=0, max_bytes=65536):
            self._enter()
            return super().actor_log(actor_id, offset, max_bytes)

    fake = Exclusive()
    app = create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "PUBLIC": True})
    st = app.extensions["parl_monitor"]
    st.start_poller(0.01)
    try:
        def hammer():
            c = app.test_client()
            for _ in range(15):
                assert c.get("/api/actors/a-1/log").status_code == 200

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        st.stop_poller()
    assert fake.overlaps == 0 and len(fake.log_calls) == 45


def test_gpu_columns_show_used_and_free_gpus_per_worker(client, fake):
    worker = fake.snapshot["workers"][0]
    worker["gpus"], worker["gpus_used"] = ["0", "1", "2"], ["1"]
    body = client.get("/api/workers/w-aaa").get_json()
    assert body["worker"]["gpus_free"] == ["0", "2"]
    html = text(client.get("/"))
    assert "<th>GPUs used</th><th>GPUs free</th>" in html
    assert '<td data-field="gpus_used">1</td>' in html and '<td data-field="gpus_free">0,2</td>' in html
    page = text(client.get("/workers/w-aaa"))
    assert '<span data-field="gpus_used">1</span> used' in page and '<span data-field="gpus_free">0,2</span>' in page
    assert "<h2>GPUs</h2>" not in text(client.get("/workers/w-bbb"))  # a worker without GPUs has no GPU card


@pytest.mark.parametrize("parl_url, ours", [
    ("/workers", "/#workers"),
    ("/clients", "/#clients"),
    ("/cluster", "/api/status"),
    ("/logs?client_id=c-111", "/clients/c-111"),
])  # fmt: skip
def test_parl_monitor_urls_redirect_to_ours(client, parl_url, ours):
    resp = client.get(parl_url)
    assert resp.status_code == 302 and resp.headers["Location"] == ours
    assert client.get(ours.split("#")[0]).status_code == 200  # the target is one of our pages


def test_parl_logs_url_without_a_client_names_the_fix(client):
    resp = client.get("/logs")
    assert resp.status_code == 400 and "client_id" in resp.get_data(as_text=True)
