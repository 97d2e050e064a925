"""A page looks finished at a width: nothing wider than the window (a table wider than it scrolls in its own box),
a navigation bar, a screenshot of the whole page taken, and axe-core (npm, in .cache/npm) finding no serious or
critical violation. Used by the browser tests of the stats page and the exam's HTML paper."""

from __future__ import annotations

from pathlib import Path

import pytest

AXE = Path(__file__).resolve().parents[1] / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (1280, 390)

# each table wider than the window, and whether the box that holds it scrolls sideways within the window
WIDE_TABLES = """() => Array.from(document.querySelectorAll('table')).filter(t => t.scrollWidth > window.innerWidth)
  .map(t => { let box = t;
    while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    return {table: t.outerHTML.slice(0, 80), scrolls: !!box && box.getBoundingClientRect().right <= window.innerWidth}; })"""


@pytest.fixture(scope="session")
def axe() -> str:
    assert AXE.is_file(), f"axe-core is missing ({AXE}): run `make setup` (it installs axe-core into .cache/npm)"
    return AXE.read_text(encoding="utf-8")


def looks_finished(page, axe: str, width: int, shot: Path) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{page.url} overflows at {width} px"
    unboxed = [t for t in page.evaluate(WIDE_TABLES) if not t["scrolls"]]
    assert not unboxed, f"tables wider than {width} px that do not scroll in their own box: {unboxed}"
    assert page.locator("nav a").count() >= 1, "no navigation bar"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 0
    found = page.evaluate(axe + "\n;axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map("
                          "v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html.slice(0, 120))})))")
    serious = [v for v in found if v["impact"] in ("serious", "critical")]
    assert not serious, f"{page.url} at {width} px: {serious}"
