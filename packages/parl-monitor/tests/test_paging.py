"""The overview pages its lists (issue #24: a cluster of 1,000 workers and 10,000 actors): each list shows PAGE_SIZE
rows, links to the other pages keep the other lists' pages, and the counts stay those of the whole cluster."""

from __future__ import annotations

import re
import time

import pytest
from fake_cluster import FakeCluster

from parl_monitor import create_app
from parl_monitor.data import overview, page_of


def big_status(n_workers: int, n_actors: int, n_clients: int) -> dict:
    now = time.time()
    workers = [{"id": f"w-{i:04d}", "host": f"h{i}", "pid": 1000 + i, "cpus_total": 32, "cpus_used": 10,
                "memory_total_mb": 1000.0, "memory_used_mb": 100.0, "load_avg": [1.0, 1.0, 1.0],
                "last_seen_s_ago": 0.1} for i in range(n_workers)]  # fmt: skip
    actors = [{"id": f"a-{i:05d}", "class_name": "Actor", "client_id": f"c-{i % n_clients:03d}",
               "worker_id": f"w-{i % n_workers:04d}", "host": "h", "pid": 5000 + i, "state": "alive",
               "created_at": now, "ended_at": None, "death_cause": None, "last_error": None}
              for i in range(n_actors)]  # fmt: skip
    clients = [{"id": f"c-{i:03d}", "host": "h", "pid": 9000 + i, "script": "train.py", "started_at": now,
                "actors": [a["id"] for a in actors if a["client_id"] == f"c-{i:03d}"]} for i in range(n_clients)]
    return {"master": {"address": "127.0.0.1:8010", "version": "x", "pid": 1, "started_at": now},
            "cpus": {"total": 32 * n_workers, "used": n_actors, "vacant": 32 * n_workers - n_actors},
            "workers": workers, "clients": clients, "actors": actors}  # fmt: skip


@pytest.fixture
def big_client():
    app = create_app({"CLIENT": FakeCluster(big_status(250, 1000, 20), logs={}), "CACHE_TTL_S": 0.0,
                      "TESTING": True, "PAGE_SIZE": 100})  # fmt: skip
    return app.test_client()


def rows(html: str, prefix: str) -> list[str]:
    return re.findall(rf'<tr data-id="({prefix}-[0-9]+)"', html)


def test_page_of_clamps_and_counts():
    items = list(range(250))
    assert page_of(items, 1, 100) == (list(range(100)), {"page": 1, "pages": 3, "size": 100, "total": 250})
    assert page_of(items, 3, 100)[0] == list(range(200, 250))
    assert page_of(items, 99, 100)[1]["page"] == 3 and page_of(items, -4, 100)[1]["page"] == 1
    assert page_of([], 1, 100) == ([], {"page": 1, "pages": 1, "size": 100, "total": 0})
    with pytest.raises(ValueError, match="page_size must be >= 1"):
        page_of(items, 1, 0)


def test_overview_data_pages_each_list_but_counts_the_whole_cluster():
    page = overview(big_status(250, 1000, 20), {"workers": 3, "actors": 2}, 100)
    assert [w["id"] for w in page["workers"]] == [f"w-{i:04d}" for i in range(200, 250)]
    assert [a["id"] for a in page["actors"]] == [f"a-{i:05d}" for i in range(100, 200)]
    assert len(page["clients"]) == 20
    assert page["paging"]["workers"] == {"page": 3, "pages": 3, "size": 100, "total": 250}
    assert page["counts"]["workers"] == 250 and page["counts"]["actors_alive"] == 1000
    assert page["workers"][0]["actors"] == 4  # alive actors on w-0200, counted over every actor, not one page
    assert "paging" not in overview(big_status(2, 3, 1))  # no page size: whole lists (the JSON API)


def test_overview_page_shows_one_page_and_links_the_others(big_client):
    html = big_client.get("/").get_data(as_text=True)
    assert rows(html, "w") == [f"w-{i:04d}" for i in range(100)]
    assert rows(html, "a") == [f"a-{i:05d}" for i in range(100)]
    assert "rows 1-100 of 250 workers · page 1 of 3" in html
    assert 'rel="next" href="?workers_page=2&amp;clients_page=1&amp;actors_page=1#workers"' in html
    assert 'id="clients-pager"' not in html  # 20 clients: one page, no pager
    html = big_client.get("/?workers_page=3&actors_page=10").get_data(as_text=True)
    assert rows(html, "w") == [f"w-{i:04d}" for i in range(200, 250)]
    assert rows(html, "a") == [f"a-{i:05d}" for i in range(900, 1000)]
    assert "rows 201-250 of 250 workers · page 3 of 3" in html
    # the other list's page is kept in every link
    assert 'rel="previous" href="?workers_page=2&amp;clients_page=1&amp;actors_page=10#workers"' in html
    assert '<p class="big" data-field="counts.workers">250</p>' in html
    # the live refresh (fragment) honours the pages too
    fragment = big_client.get("/?workers_page=2&fragment=1").get_data(as_text=True)
    assert rows(fragment, "w")[0] == "w-0100" and "<html" not in fragment
    # nonsense page numbers fall back to a page that exists
    assert rows(big_client.get("/?workers_page=abc").get_data(as_text=True), "w")[0] == "w-0000"
