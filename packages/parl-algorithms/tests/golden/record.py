"""Write the golden outputs of every case on every installed backend to ``golden/<backend>.json``.

Run from anywhere: ``python packages/parl-algorithms/tests/golden/record.py [backend ...]``; with ``marl`` first
(``record.py marl [backend ...]``), the multi-agent cases (``golden_marl_cases.py``) to ``golden/marl-<backend>.json``.
Record only on code whose behaviour is meant to be the reference; ``test_golden_outputs.py`` and
``test_golden_marl_outputs.py`` compare against these files.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main(backends: list[str], marl: bool = False) -> None:
    cases = importlib.import_module("golden_marl_cases" if marl else "golden_cases")
    for backend in backends:
        if importlib.util.find_spec(backend) is None:
            print(f"{backend}: not installed, skipped")
            continue
        records = {name: cases.run_case(backend, name) for name in cases.CASES}
        path = HERE / f"{'marl-' if marl else ''}{backend}.json"
        path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
        print(f"{backend}: {len(records)} cases -> {path.name}")


if __name__ == "__main__":
    args = sys.argv[1:]
    marl = args[:1] == ["marl"]
    main(args[marl:] or ["torch", "paddle"], marl)
