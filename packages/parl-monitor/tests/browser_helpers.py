"""Helpers for reading figures out of the monitor's pages in a real browser."""

from __future__ import annotations

import time


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition", interval_s: float = 0.1):
    """Poll ``predicate`` until it returns a truthy value (returned) or fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last_exc = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - stale elements while the page swaps its live part
            last_exc = exc
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}" + (f" (last error: {last_exc!r})"
                                                                                 if last_exc else ""))


def field(driver, name: str, scope: str = "") -> str:
    """The text of the element ``[data-field=name]`` (inside ``scope``, a CSS selector, when given)."""
    selector = (scope + " " if scope else "") + f'[data-field="{name}"]'
    # Read in one script call: the page swaps its live part every refresh, so element handles go stale.
    found = driver.execute_script("var e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
                                  selector)
    if found is None:
        raise AssertionError(f"no element {selector!r} in {driver.current_url}")
    return found.strip()


def row_field(driver, table_id: str, row_id: str, name: str) -> str:
    """The text of ``[data-field=name]`` in the row ``data-id=row_id`` of table ``#table_id``."""
    return field(driver, name, f'#{table_id} tr[data-id="{row_id}"]')


def row_ids(driver, table_id: str) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(function (r) { return r.dataset.id; });",
        f"#{table_id} tr[data-id]")


def mb(value: float) -> str:
    return f"{float(value):.0f} MB"


def load_text(load_avg) -> str:
    return " / ".join(f"{x:.2f}" for x in load_avg)


def check_overview(driver, snapshot: dict) -> None:
    """Assert that the overview page shows the figures of ``snapshot`` (a contract-B status)."""
    from parl_monitor.state import summarize

    s = summarize(snapshot)
    assert field(driver, "cpus.total") == str(s["cpus"]["total"])
    assert field(driver, "cpus.used") == str(s["cpus"]["used"])
    assert field(driver, "cpus.vacant") == str(s["cpus"]["vacant"])
    assert field(driver, "memory.total_mb") == mb(s["memory"]["total_mb"])
    assert field(driver, "counts.workers") == str(len(snapshot["workers"]))
    assert field(driver, "counts.clients") == str(len(snapshot["clients"]))
    assert field(driver, "counts.actors_alive") == str(s["counts"]["actors_alive"])
    assert field(driver, "counts.actors_dead") == str(s["counts"]["actors_dead"])
    assert field(driver, "counts.errors") == str(s["counts"]["errors"])
    assert sorted(row_ids(driver, "workers-table")) == sorted(w["id"] for w in snapshot["workers"])
    assert sorted(row_ids(driver, "clients-table")) == sorted(c["id"] for c in snapshot["clients"])
    assert sorted(row_ids(driver, "actors-table")) == sorted(a["id"] for a in snapshot["actors"])
    for w in snapshot["workers"]:
        assert row_field(driver, "workers-table", w["id"], "cpus_used") == str(w["cpus_used"])
        assert row_field(driver, "workers-table", w["id"], "cpus_total") == str(w["cpus_total"])
        assert row_field(driver, "workers-table", w["id"], "cpus_vacant") == str(w["cpus_total"] - w["cpus_used"])
        assert row_field(driver, "workers-table", w["id"], "host") == w["host"]
    for c in snapshot["clients"]:
        assert row_field(driver, "clients-table", c["id"], "script") == c["script"]
    for a in snapshot["actors"]:
        assert row_field(driver, "actors-table", a["id"], "state") == a["state"]
        assert row_field(driver, "actors-table", a["id"], "pid") == str(a["pid"])
