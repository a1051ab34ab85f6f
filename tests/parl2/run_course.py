"""Run lessons of PARL's course (``tests/parl2/course``) on a tiny budget, their files unchanged, in one process.

Usage::

    python tests/parl2/run_course.py '<json list of lesson specs>'

Each spec is a dict:

- ``dir``: the lesson folder (holding ``train.py``); the run ``chdir``s there (it writes its checkpoints and
  ``train_log`` there).
- ``set``: module-level names of ``train.py`` to replace after it is loaded, e.g. ``{"MEMORY_WARMUP_SIZE": 50}``.
- ``range``: ``{"50": 3}`` makes ``range(50)`` in ``train.py`` (one argument, that value) ``range(3)``; the
  loop counts of the lessons live inside ``main`` (``for i in range(1000)``), not in constants.
- ``args``: the ``argparse`` namespace ``args`` that the script's ``__main__`` block would build.
- ``env``: keyword arguments added to each ``gym.make`` of ``train.py`` (``{"max_episode_steps": 100}``).
- ``stop``: a regular expression; the lesson stops (successfully) at the first ``logger.info`` message that
  matches it (PARL's DQN lesson loops ``while episode < max_episode`` with a local ``max_episode = 2000``).

``train.py`` is executed as a module named ``__course_lesson__`` (so its ``if __name__ == '__main__'`` block does
not run), the replacements are applied, and its ``main()`` is called. The lesson's sibling modules (``model``,
``agent``, ...) are imported from its folder, and dropped from ``sys.modules`` before the next lesson. Each
lesson prints ``COURSE-LESSON-END <dir> <the stop message or 'main returned'>`` when it ends.
"""

from __future__ import annotations

import argparse
import builtins
import functools
import json
import os
import re
import sys
import time
from typing import Any


class _Stop(Exception):
    """Raised by the patched ``logger.info`` at the stop message."""


def _capped_range(caps: dict[int, int]) -> Any:
    def range_(*args: int) -> range:
        if len(args) == 1 and args[0] in caps:
            return builtins.range(caps[args[0]])
        return builtins.range(*args)

    return range_


def run_lesson(spec: dict[str, Any]) -> str:
    """Run one lesson as described in the module docstring; returns how it ended."""
    from parl.utils import logger

    folder = os.path.abspath(spec["dir"])
    os.chdir(folder)
    for name in [f[:-3] for f in os.listdir(folder) if f.endswith(".py")]:
        sys.modules.pop(name, None)
    sys.path.insert(0, folder)
    namespace: dict[str, Any] = {"__name__": "__course_lesson__", "__file__": os.path.join(folder, "train.py")}
    with open("train.py", encoding="utf-8") as f:
        exec(compile(f.read(), namespace["__file__"], "exec"), namespace)
    namespace.update(spec.get("set", {}))
    if "range" in spec:
        namespace["range"] = _capped_range({int(k): v for k, v in spec["range"].items()})
    if "args" in spec:
        namespace["args"] = argparse.Namespace(**spec["args"])
    gym = namespace.get("gym")
    original_make = gym.make if gym is not None else None
    if "env" in spec:
        gym.make = functools.partial(original_make, **spec["env"])
    original_info = logger.info
    stop = re.compile(spec["stop"]) if spec.get("stop") else None

    def info(msg: Any, *args: Any, **kwargs: Any) -> None:
        original_info(msg, *args, **kwargs)
        text = str(msg) % args if args else str(msg)
        if stop is not None and stop.search(text):
            raise _Stop(text)

    logger.info = info
    try:
        namespace["main"]()
        ended = "main returned"
    except _Stop as e:
        ended = str(e)
    finally:
        logger.info = original_info
        if original_make is not None:
            gym.make = original_make
        sys.path.remove(folder)
    return ended


def main() -> None:
    specs = json.loads(sys.argv[1])
    for spec in specs:
        spec["dir"] = os.path.abspath(spec["dir"])
    for spec in specs:
        start = time.process_time()
        ended = run_lesson(spec)
        print(f"COURSE-LESSON-END {spec['dir']} cpu={time.process_time() - start:.1f}s {ended}", flush=True)


if __name__ == "__main__":
    main()
