"""XPARL_PRELOAD: the zygote imports the named modules once, before it forks any job."""

from __future__ import annotations

import sys

import pytest
from conftest import start_cluster, wait_until

import parl_remote as xparl


@xparl.remote_class
class Probe:
    def loaded(self, name: str) -> bool:
        return name in sys.modules


@pytest.mark.parametrize("preload", ["colorsys, no_such_module_for_xparl", ""])
def test_jobs_start_with_the_preloaded_modules(monkeypatch, xparl_home, preload):
    monkeypatch.setenv("XPARL_PRELOAD", preload)
    cluster = start_cluster(cpu_num=1, parent=True)
    try:
        xparl.connect(cluster.address, token=cluster.token)
        probe = Probe()
        # a module the job never imports itself is there only when the zygote preloaded it
        assert probe.loaded("colorsys") is bool(preload)
        if preload:
            # a module that cannot be imported is reported in the worker's job start-up log; the jobs still start
            wanted = "XPARL_PRELOAD: cannot import 'no_such_module_for_xparl'"
            wait_until(
                lambda: any(wanted in p.read_text(errors="replace") for p in xparl_home.rglob("jobs.log")),
                message="the preload failure in a jobs.log",
            )
    finally:
        xparl.disconnect()
        cluster.stop()


def test_preload_reports_and_skips_what_fails(capsys):
    from parl_remote.server.zygote import preload

    assert preload(" colorsys ,, no_such_module_for_xparl ") == ["colorsys"]
    assert "cannot import 'no_such_module_for_xparl'" in capsys.readouterr().err
