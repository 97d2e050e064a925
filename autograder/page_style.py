"""The one stylesheet of qkv's HTML pages (page.css beside this module): takes nothing, gives the CSS each page's
template inlines, so a page works offline as one file and under the service's CSP (inline styles, no other origin)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from markupsafe import Markup


@cache
def page_style() -> Markup:
    return Markup(files("autograder").joinpath("page.css").read_text(encoding="utf-8"))
