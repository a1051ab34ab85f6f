"""Sphinx configuration of the PARL monorepo's documentation site (``nox -s docs`` builds and tests it).

Offline by design: no intersphinx, no remote images, no theme assets fetched at build time. The pages are
Markdown (MyST); several include the packages' and examples' READMEs (``docs/_ext/parl_docs.py`` rewrites
their repository-relative links); the API reference is autodoc over the installed packages, and a public name
without a docstring is a warning, which ``-W`` turns into a failed build.
"""

from __future__ import annotations

import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

# The API reference documents the torch classes (parl_core.Model and the zoo resolve to the selected backend).
os.environ.setdefault("PARL_BACKEND", "torch")

project = "PARL"
author = "The PARL monorepo authors"
copyright = "2026, the PARL monorepo authors"
release = version = "3.0.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_click",
    "parl_docs",
    "bench_plots",
    "atari_results",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "tests", "Thumbs.db", ".DS_Store"]

# MyST: heading anchors so that [text](page.md#a-heading) links are checked by -W.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

# autodoc / napoleon (Google style, as STYLE.md asks)
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autoclass_content = "both"
autodoc_inherit_docstrings = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes:" as fields: no second description of an attribute autodoc documents
# Third-party annotations stay plain text: nitpicky cross-references to torch / numpy would need intersphinx.
nitpicky = False

html_theme = "furo"
html_title = "PARL 3.0.0"
html_static_path = ["_static"]  # parl.css; the figures drawn as SVG
html_css_files = ["parl.css"]
html_show_sourcelink = False
pygments_style = "sphinx"
