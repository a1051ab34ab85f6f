"""The events page (``/events``) and ``/api/events``: the cluster's event log as the master writes it
(``parl_remote.server.events``), newest first on the page; a monitor without ``--events-file`` says how to get one."""

from __future__ import annotations

import pytest
from fake_cluster import FakeCluster

from parl_monitor import create_app
from parl_remote.server.events import EventLog


@pytest.fixture
def event_log(tmp_path):
    path = tmp_path / "events-8010.jsonl"
    log = EventLog(path)
    log.write("master_started", address="127.0.0.1:8010", restarted=False)
    log.write("worker_joined", worker_id="w-aaa", host="127.0.0.1", pid=124, cpus=4, gpus=[], rejoined=False,
              actors=[])
    log.write("actor_granted", actor_id="a-1", class_name="<script>alert(1)</script>", client_id="c-111",
              worker_id="w-aaa", host="127.0.0.1", gpus=[], waited_s=0.01)
    log.write("actor_died", actor_id="a-1", class_name="Actor", client_id="c-111", worker_id="w-aaa",
              cause="killed by signal 9 (SIGKILL)", cause_kind="killed")
    log.close()
    with open(path, "a") as f:
        f.write('{"cut by a crash\n')  # a line that is not JSON is skipped
    return path


def app_with(events_file=None, **extra):
    return create_app({"CLIENT": FakeCluster(), "CACHE_TTL_S": 0.0, "EVENTS_FILE": events_file, **extra})


def test_api_events_oldest_first(event_log):
    client = app_with(str(event_log)).test_client()
    body = client.get("/api/events").get_json()
    assert [e["event"] for e in body["events"]] == ["master_started", "worker_joined", "actor_granted", "actor_died"]
    assert body["file"] == str(event_log)
    assert [e["seq"] for e in client.get("/api/events?last=2").get_json()["events"]] == [3, 4]


@pytest.mark.parametrize("query", ["last=0", "last=abc", "last=100000"])
def test_api_events_bad_last_is_400(event_log, query):
    response = app_with(str(event_log)).test_client().get(f"/api/events?{query}")
    assert response.status_code == 400 and "last" in response.get_json()["message"]


def test_events_page_newest_first_and_escaped(event_log):
    client = app_with(str(event_log)).test_client()
    html = client.get("/events").get_data(as_text=True)
    assert html.index('data-event="actor_died"') < html.index('data-event="master_started"')
    assert "killed by signal 9 (SIGKILL)" in html and 'href="/actors/a-1"' in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert 'data-field="events.count">4<' in html
    assert client.get("/events?fragment=1").get_data(as_text=True).lstrip().startswith("<p>")
    assert 'href="/events"' in client.get("/").get_data(as_text=True)  # in the navigation


def test_without_an_event_log(tmp_path):
    client = app_with(None).test_client()
    assert "--events-file" in client.get("/events").get_data(as_text=True)
    missing = client.get("/api/events")
    assert missing.status_code == 404 and "--events-file" in missing.get_json()["message"]
    not_yet = app_with(str(tmp_path / "events-1.jsonl")).test_client().get("/api/events")
    assert not_yet.status_code == 200 and not_yet.get_json()["events"] == []


def test_events_need_the_token_off_loopback(event_log):
    client = app_with(str(event_log), HOST="10.1.2.3", TOKEN="t0k").test_client()
    assert client.get("/api/events").status_code == 401 and client.get("/events").status_code == 401
    assert client.get("/api/events", headers={"Authorization": "Bearer t0k"}).status_code == 200


def test_cli_passes_the_events_file():
    from click.testing import CliRunner

    from parl_monitor.cli import main

    assert "--events-file" in CliRunner().invoke(main, ["--help"]).output
