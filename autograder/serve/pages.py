"""The service's pages: Jinja2 templates (autoescaped) in templates/, and the words for times and scores."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Optional

from jinja2 import Environment, FileSystemLoader, select_autoescape

_ENV = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                   autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)


def when(moment: Optional[dt.datetime | float]) -> str:
    if moment is None:
        return "none"
    if isinstance(moment, (int, float)):
        moment = dt.datetime.fromtimestamp(moment, dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def points(value: Optional[float]) -> str:
    return "" if value is None else f"{value:g}"


_ENV.filters["when"] = when
_ENV.filters["points"] = points


def page(template: str, **context: Any) -> str:
    return _ENV.get_template(template).render(**context)


class Refusal(Exception):
    """A request the service says no to, with the status and the one sentence the page shows."""

    def __init__(self, status: int, message: str, heading: str = "Not possible"):
        super().__init__(message)
        self.status, self.message, self.heading = status, message, heading
