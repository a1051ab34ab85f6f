"""docs/tests: the extension (docs/_ext) and the block parser (blocks.py) are imported from their folders."""

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parents[1]
for path in (DOCS / "_ext", DOCS / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
