"""The site's own Sphinx extension: README inclusion, missing-docstring and public-API coverage checks.

1. ``{readme}`` blocks. A page holds a fenced block

   .. code-block:: markdown

      ```{readme} examples/dqn/README.md
      :start: ## Results
      :end: ## Peer
      :shift: 1
      ```

   which is replaced (at ``source-read``) by that README's text, from the line that starts with ``:start:``
   (included) to the line that starts with ``:end:`` (excluded), headings shifted down by ``:shift:`` levels.
   ``:body:`` leaves out the README's title (its first line, a ``#`` heading), for a page that has its own;
   ``:no-images:`` leaves out the lines that are only an image (a page that shows them in a section of its own).
   A block without ``:start:`` makes its page *the* page of that README (an ``:end:`` may still cut a last section).
   Links are rewritten for the site: a link to a README that some page includes as its page goes to that page, an
   image to its file in the repository, any other repository path becomes plain text naming the path (the
   site does not host source files). A ``:start:`` or ``:end:`` line that is not found is an error.

2. Missing docstrings. Every module, class, function, method and property that autodoc documents must have a
   docstring: an empty one is a warning (``-W``: a failed build).

3. Learning curves. Every ``examples/<name>/results/<run>/`` folder with ``seed*/curve.csv`` files (the runs an
   example's README reports) is plotted, at ``builder-inited``, into ``docs/_generated/curves/<name>-<run>.png``
   (by the columns of :data:`CURVE_AXES` each file has, e.g. evaluation return against env steps, one line per
   seed); pages show them with a ``{figure}``.

4. Private bases. A class's ``Bases:`` line names no private class (a name or module path part starting with
   ``_``): each is replaced by its public bases (:func:`public_bases`).

5. Public-API coverage. Every name in the ``__all__`` of the modules in :data:`PUBLIC_MODULES` must be
   documented by the API reference under that module's name; ``parl``'s re-exports must point at a documented
   object. A missing one is a warning.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import re
from typing import Any

from atari_results import trailing_mean
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

DOCS = pathlib.Path(__file__).resolve().parents[1]
ROOT = DOCS.parent

# The modules whose ``__all__`` is the public API, by package (the API reference has one page per package).
PUBLIC_MODULES: dict[str, list[str]] = {
    "parl_core": ["parl_core", "parl_core.utils", "parl_core.env", "parl_core.paddle"],
    "parl_algorithms": ["parl_algorithms", "parl_algorithms.vtrace", "parl_algorithms.paddle"],
    "parl_remote": ["parl_remote"],
    "parl_monitor": ["parl_monitor"],
    "evokit": ["evokit", "evokit.solvers", "evokit.optimizers", "evokit.noise", "evokit.models"],
}
# Names in __all__ that are documented as modules of their own (autodoc does not document a module as a member).
MODULE_MEMBERS = {"parl_core.utils.atomic", "parl_core.utils.logger", "parl_core.utils.run", "parl_core.utils.summary"}
CHECKED_KINDS = {"module", "class", "exception", "function", "method", "property", "classmethod", "staticmethod"}

_BLOCK = re.compile(r"^```\{readme\}[ \t]+(?P<path>\S+)[ \t]*\n(?P<opts>(?::[a-z-]+:.*\n)*)```[ \t]*$", re.M)
_LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def readme_blocks(text: str) -> list[tuple[re.Match[str], str, dict[str, str]]]:
    """The ``{readme}`` blocks of a page: (match, repository path, options)."""
    out = []
    for m in _BLOCK.finditer(text):
        opts = {}
        for line in m.group("opts").splitlines():
            key, _, value = line[1:].partition(":")
            opts[key] = value.strip()
        out.append((m, m.group("path"), opts))
    return out


def whole_readme_pages() -> dict[str, str]:
    """Repository path of each README that a page includes as its page (no ``:start:``) -> that page's docname."""
    pages: dict[str, str] = {}
    for page in sorted(DOCS.rglob("*.md")):
        if "_build" in page.parts or "tests" in page.relative_to(DOCS).parts:
            continue
        for _, path, opts in readme_blocks(page.read_text(encoding="utf-8")):
            if "start" not in opts:
                pages.setdefault(path, page.relative_to(DOCS).with_suffix("").as_posix())
    return pages


def _rewrite_link(m: re.Match[str], readme: pathlib.Path, docdir: pathlib.Path, pages: dict[str, str]) -> str:
    bang, text, target = m.group("bang"), m.group("text"), m.group("target")
    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
        return m.group(0)
    path, _, frag = target.partition("#")
    resolved = (readme.parent / path).resolve()
    try:
        rel = resolved.relative_to(ROOT).as_posix()
    except ValueError:
        return text
    if bang:
        return f"![{text}]({os.path.relpath(resolved, docdir)})"
    if rel in pages:
        return f"[{text}](/{pages[rel]}.md{'#' + frag if frag else ''})"
    if f"{rel}/README.md" in pages:  # a link to an example's folder goes to its page
        return f"[{text}](/{pages[rel + '/README.md']}.md)"
    shown = text if rel in text else f"{text} (`{rel}`)"
    return shown


def render_readme(path: str, opts: dict[str, str], docname: str, pages: dict[str, str]) -> str:
    """The README's text (the selected lines), headings shifted and links rewritten for page ``docname``."""
    readme = ROOT / path
    lines = readme.read_text(encoding="utf-8").splitlines()
    if "body" in opts:
        if not lines or not lines[0].startswith("# "):
            raise ValueError(f"{path}: :body: drops the title, but the first line is no '# ' heading ({docname})")
        lines = lines[1:]
        while lines and not lines[0].strip():
            lines = lines[1:]
    if "no-images" in opts:
        lines = [line for line in lines if not re.fullmatch(r"\s*!\[[^\]]*\]\([^)]*\)\s*", line)]
    start, end = opts.get("start"), opts.get("end")
    if start is not None:
        idx = next((i for i, line in enumerate(lines) if line.startswith(start)), None)
        if idx is None:
            raise ValueError(f"{path}: no line starts with {start!r} (the :start: of a readme block in {docname})")
        lines = lines[idx:]
    if end is not None:
        idx = next((i for i, line in enumerate(lines) if i > 0 and line.startswith(end)), None)
        if idx is None:
            raise ValueError(f"{path}: no line starts with {end!r} (the :end: of a readme block in {docname})")
        lines = lines[:idx]
    shift = int(opts.get("shift", "0"))
    docdir = (DOCS / docname).parent
    out, in_code = [], False
    for line in lines:
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            heading = re.match(r"^(#{1,6}) ", line)
            if shift and heading:
                level = max(1, min(6, len(heading.group(1)) + shift))
                line = "#" * level + line[len(heading.group(1)):]
            line = _LINK.sub(lambda m: _rewrite_link(m, readme, docdir, pages), line)
        out.append(line)
    return "\n".join(out) + "\n"


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    text = source[0]
    blocks = readme_blocks(text)
    if not blocks:
        return
    pages = app.env.parl_readme_pages  # type: ignore[attr-defined]
    for m, path, opts in reversed(blocks):
        app.env.note_dependency(str(ROOT / path))
        text = text[: m.start()] + render_readme(path, opts, docname, pages) + text[m.end():]
    source[0] = text


def curve_runs() -> dict[str, list[pathlib.Path]]:
    """``<example>-<run>`` -> the ``curve.csv`` of each seed, for every results folder of the examples (but the
    runs recorded by ``benchmarks/atari/run_curve.py``, a ``run.json`` beside the curve: the Results page draws
    those, ``atari_results.py``)."""
    runs: dict[str, list[pathlib.Path]] = {}
    for csv in sorted(ROOT.glob("examples/*/results/*/seed*/curve.csv")):
        if (csv.parent / "run.json").is_file():
            continue
        run_dir = csv.parent.parent
        runs.setdefault(f"{run_dir.parents[1].name}-{run_dir.name}", []).append(csv)
    return runs


#: the columns a curve.csv is plotted by, the first pair it has with a value in every row:
#: (x column, y column, x label, y label)
CURVE_AXES = (
    ("env_steps", "eval_return_mean", "env steps", "evaluation return (mean)"),
    # examples that evaluate only near the target (a2c, ppo, dqn): eval_return_mean is empty in most rows
    ("env_steps", "train_return_mean", "env steps", "training return (mean of the last 10 episodes)"),
    # offline examples (cql, iql, dt): no env steps while learning
    ("gradient_steps", "eval_return_mean", "gradient steps", "evaluation return (mean)"),
    ("meta_updates", "test_mse", "meta-updates", "test MSE (new tasks)"),  # examples/maml
    # a row per finished training episode (a2c_distributed, ga3c): plotted as the mean of the last EPISODE_WINDOW
    ("env_steps", "episode_return", "env steps", "training return (mean of the last 10 episodes)"),
)
#: the episodes a per-episode ``episode_return`` curve is averaged over (the label of its CURVE_AXES entry says 10)
EPISODE_WINDOW = 10


def curve_axes(header: list[str], path: pathlib.Path,
               rows: list[dict[str, str]] | None = None) -> tuple[str, str, str, str]:
    """The first entry of :data:`CURVE_AXES` whose two columns ``header`` has and, when ``rows`` (the
    file's rows, as ``csv.DictReader`` reads them) is given, every row fills.

    Raises:
        ValueError: none fits (add the example's columns to ``CURVE_AXES``).
    """
    for axes in CURVE_AXES:
        if axes[0] in header and axes[1] in header and all(r[axes[0]] and r[axes[1]] for r in rows or ()):
            return axes
    raise ValueError(f"{path}: no pair of columns of CURVE_AXES filled in every row of {header}; "
                     "add this example's to CURVE_AXES")


def seed_spread(curves: list[tuple[list[float], list[float]]],
                points: int = 200) -> tuple[list[float], list[float], list[float], list[float]]:
    """The spread of several seeds' curves ``(xs, ys)`` (each xs ascending): ``(grid, min, mean, max)`` on
    ``points`` evenly spaced x values over the range every curve covers (from the largest first x to the smallest
    last x), each curve linearly interpolated there (``numpy.interp``; at a repeated x its last point counts);
    empty lists where the curves share no range."""
    import numpy as np

    curves = [(xs, ys) for xs, ys in curves if xs]
    if not curves:
        return [], [], [], []
    start, stop = max(xs[0] for xs, _ in curves), min(xs[-1] for xs, _ in curves)
    if stop <= start:
        return [], [], [], []
    grid = np.linspace(start, stop, points)
    last_per_x = [dict(zip(xs, ys, strict=True)) for xs, ys in curves]  # a repeated x keeps its last y
    at = np.array([np.interp(grid, list(d), list(d.values())) for d in last_per_x])
    return grid.tolist(), at.min(0).tolist(), at.mean(0).tolist(), at.max(0).tolist()


def plot_curves(out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Plot each run of :func:`curve_runs` (by :data:`CURVE_AXES`, e.g. ``eval_return_mean`` against
    ``env_steps``) into ``out_dir``: a thin line per seed, and over the steps every seed reached, their mean and
    their spread (min to max, shaded)."""
    import csv as csv_module

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, files in curve_runs().items():
        tables = []
        for csv_path in files:
            with csv_path.open(newline="", encoding="utf-8") as f:
                reader = csv_module.DictReader(f)
                tables.append((csv_path, list(reader.fieldnames or []), list(reader)))
        # one pair of columns for all the seeds of a run: the first that every seed's file fills
        common = [c for c in tables[0][1] if all(c in header for _, header, _ in tables)]
        x_key, y_key, x_label, y_label = curve_axes(common, files[0].parent.parent,
                                                    [r for _, _, rows in tables for r in rows])
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
        curves = []
        for csv_path, _, rows in tables:
            ys = [float(r[y_key]) for r in rows]
            if y_key == "episode_return":
                ys = trailing_mean(ys, EPISODE_WINDOW)
            xs = [float(r[x_key]) for r in rows]
            curves.append((xs, ys))
            ax.plot(xs, ys, marker="." if y_key != "episode_return" else None, linewidth=0.8, alpha=0.6,
                    label=csv_path.parent.name)  # fmt: skip
        grid, low, mean, high = seed_spread(curves)
        if len(curves) > 1 and len(grid) > 1:
            ax.fill_between(grid, low, high, color="0.5", alpha=0.2, linewidth=0, label="seed spread (min-max)")
            ax.plot(grid, mean, color="black", linewidth=1.6, label="mean over seeds")
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.set_title(f"{name}: {len(files)} seeds (examples/{name.split('-')[0]}/results)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = out_dir / f"{name}.png"
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def _builder_inited(app: Sphinx) -> None:
    app.env.parl_readme_pages = whole_readme_pages()  # type: ignore[attr-defined]
    plot_curves(DOCS / "_generated" / "curves")


OUR_ROOTS = ("parl", "parl_core", "parl_algorithms", "parl_remote", "parl_monitor", "evokit")


def drop_foreign_init_doc(obj: Any, lines: list[str]) -> None:
    """Remove from a class's lines the ``__init__`` docstring inherited from a third-party base (``torch.nn.Module``'s
    "Initialize internal Module state ..."), which ``autoclass_content = "both"`` would show as ours."""
    for base in getattr(obj, "__mro__", ())[1:]:
        if base.__module__.split(".")[0] in OUR_ROOTS or "__init__" not in vars(base):
            continue
        doc = inspect.getdoc(base.__init__)
        if not doc:
            continue
        foreign = doc.splitlines()
        for i in range(len(lines) - len(foreign) + 1):
            if [line.strip() for line in lines[i: i + len(foreign)]] == [line.strip() for line in foreign]:
                del lines[i: i + len(foreign)]
                break


PADDLE_TWINS = "parl_algorithms.paddle."


def point_paddle_twin_to_torch(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A class of ``parl_algorithms.paddle`` keeps the first line of its docstring and points to its torch twin's
    entry, which documents the arguments, shapes and errors both share (the paddle page would repeat them all)."""
    if what != "class" or not name.startswith(PADDLE_TWINS) or "." in name[len(PADDLE_TWINS):]:
        return
    twin = f"parl_algorithms.{name[len(PADDLE_TWINS):]}"
    first = next((line for line in lines if line.strip()), "")
    lines[:] = [first, "", f"The PaddlePaddle twin of :class:`{twin}`: see that entry for its arguments, "
                "methods, shapes, dtypes and errors (the same here, with ``paddle.Tensor`` inputs and outputs)."]


def _check_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what in ("class", "exception"):
        had_text = any(line.strip() for line in lines)
        drop_foreign_init_doc(obj, lines)
        if had_text and not any(line.strip() for line in lines):
            return  # this was the third-party __init__ part (autodoc passes the class and __init__ parts apart)
    if what not in CHECKED_KINDS and not (what == "data" and name.count(".") == 1):
        return
    if any(part.startswith("_") for part in name.split(".")):
        return
    if not any(line.strip() for line in lines):
        logger.warning("public %s %s has no docstring (add a short Google-style one)", what, name,
                       type="parl", subtype="nodoc")


def public_names() -> list[tuple[str, str]]:
    """(module, name) for every name in the ``__all__`` of :data:`PUBLIC_MODULES`, dunders left out."""
    out = []
    for modules in PUBLIC_MODULES.values():
        for module_name in modules:
            module = importlib.import_module(module_name)
            out += [(module_name, n) for n in module.__all__ if not n.startswith("__")]
    return out


def _check_coverage(app: Sphinx, env: Any) -> None:
    documented = set(env.domains["py"].objects)
    for module_name, name in public_names():
        full = f"{module_name}.{name}"
        if full not in documented and full not in MODULE_MEMBERS:
            logger.warning("public name %s is not in the API reference (docs/api/)", full, type="parl",
                           subtype="coverage")
    for full in sorted(MODULE_MEMBERS):
        if full not in documented:
            logger.warning("public module %s is not in the API reference (docs/api/)", full, type="parl",
                           subtype="coverage")
    parl = importlib.import_module("parl")
    for name, (module_name, attr) in sorted(parl._EXPORTS.items()):
        target = module_name if attr is None else f"{module_name}.{attr}"
        target = {"parl.algorithms": "parl_algorithms", "parl.utils": "parl_core.utils",
                  "parl.env": "parl_core.env"}.get(target, target)
        if target not in documented:
            logger.warning("parl.%s re-exports %s, which the API reference does not document", name, target,
                           type="parl", subtype="coverage")


def is_private_class(cls: type) -> bool:
    """A class whose name, or a part of whose module path, starts with ``_``
    (``parl_algorithms.torch._common.LazyInfo``, ``parl_core._agent_base.AgentBase``): an implementation detail
    that the API reference does not document."""
    module = getattr(cls, "__module__", "") or ""
    return cls.__name__.startswith("_") or any(part.startswith("_") for part in module.split("."))


def public_bases(bases: list[type]) -> list[type]:
    """``bases`` with each private class replaced by its own public bases (recursively), without repeats; ``[object]``
    when none is left."""
    out: list[type] = []
    for base in bases:
        for public in public_bases(list(base.__bases__)) if is_private_class(base) else [base]:
            if public not in out:
                out.append(public)
    return [b for b in out if b is not object] or [object]


def _hide_private_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    """``Bases:`` lines name public classes only (a private mixin's place is taken by its public bases)."""
    bases[:] = public_bases(list(bases))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the extension's event handlers."""
    app.connect("builder-inited", _builder_inited)
    app.connect("source-read", _source_read)
    app.connect("autodoc-process-docstring", _check_docstring)
    app.connect("autodoc-process-docstring", point_paddle_twin_to_torch)
    app.connect("autodoc-process-bases", _hide_private_bases)
    app.connect("env-check-consistency", _check_coverage)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
