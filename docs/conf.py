"""Sphinx configuration of the pytest-repoexec documentation (build: see README.md)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "pytest-repoexec"
author = "the pytest-repoexec authors"
copyright = "the pytest-repoexec authors"

extensions = ["myst_parser", "repoexec_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Links between pages are Markdown links to .md files and to their headings' anchors: a link to a page or an
# anchor that does not exist is a warning, and the build (-W) fails on it.
myst_heading_anchors = 4
myst_enable_extensions = ["deflist", "colon_fence"]
suppress_warnings: list[str] = []
nitpicky = True

highlight_language = "text"  # a block without a language is shown as it is
smartquotes = False  # "--option" in generated help text stays two hyphens, not a dash
html_theme = "furo"
html_title = "pytest-repoexec"
html_static_path: list[str] = []
html_show_sourcelink = False
