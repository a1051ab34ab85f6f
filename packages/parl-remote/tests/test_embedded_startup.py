"""An embedded cluster's start-up (worker, zygote, XPARL_PRELOAD imports) does not count against resource_wait_s."""

from __future__ import annotations

import os
import sys
import textwrap

from conftest import run_python


def test_a_slow_worker_start_does_not_use_up_the_resource_wait(tmp_path):
    # a module that takes 4 s to import, preloaded by the embedded cluster's zygote before any job exists
    (tmp_path / "slow_import_for_xparl.py").write_text("import time\ntime.sleep(4)\n")
    code = textwrap.dedent("""
        import time
        import parl_remote as xparl

        @xparl.remote_class
        class A:
            def ok(self):
                return "ok"

        xparl.connect(cpu_num=1, resource_wait_s=1.0)
        t0 = time.monotonic()
        print(A().ok(), round(time.monotonic() - t0, 1))
        xparl.disconnect()
    """)
    env = {"XPARL_PRELOAD": "slow_import_for_xparl", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = run_python(code, env=env, cwd=tmp_path, timeout_s=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer, waited = proc.stdout.split()
    assert answer == "ok" and float(waited) >= 3.0  # it waited through the start-up, longer than resource_wait_s
