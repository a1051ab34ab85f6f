"""Write the golden outputs of every case on every installed backend to ``golden/<backend>.json``.

Run from anywhere: ``python packages/parl-algorithms/tests/golden/record.py [backend ...]``. Record only on
code whose behaviour is meant to be the reference; ``test_golden_outputs.py`` compares against these files.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from golden_cases import CASES, run_case  # noqa: E402


def main(backends: list[str]) -> None:
    for backend in backends:
        if importlib.util.find_spec(backend) is None:
            print(f"{backend}: not installed, skipped")
            continue
        records = {name: run_case(backend, name) for name in CASES}
        path = HERE / f"{backend}.json"
        path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
        print(f"{backend}: {len(records)} cases -> {path.name}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["torch", "paddle"])
