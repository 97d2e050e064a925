"""The feedback page in a real browser: headless Chromium draws every picture large enough with its colour scale, and
axe-core (from npm, run in the same browser) finds no serious accessibility violation.

Pages are the sample class's (examples/submissions/attention-numpy), graded by `qkv grade`, rendered before and
after the due date, and the page of a file that exits while loading. `make setup` installs chromium (apt) and
axe-core (npm, into .cache/npm); where either is missing these tests fail and say so.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from autograder.bundle import read_bundle
from autograder.exam.pdf import find_browser, headless_command
from autograder.report.feedback import feedback_html
from autograder.report.pictures import CIVIDIS, PURPLE_ORANGE
from autograder.routes.class_grading import grade_class
from conftest import HOSTILE, ROOT

pytestmark = pytest.mark.slow  # a real browser

SAMPLES = ROOT / "examples" / "submissions" / "attention-numpy"
AXE = ROOT / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
SETUP_HINT = "run `make setup` (as root it installs chromium; it installs axe-core from npm into .cache/npm)"
BEFORE = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
AFTER = dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)
WIDTH = 1000

# what the browser reports back: every image's rendered box, written into the page for --dump-dom to return
MEASURE = """<script>
window.addEventListener('load', function () {
  var boxes = Array.prototype.map.call(document.querySelectorAll('img'), function (img) {
    var r = img.getBoundingClientRect();
    var group = img.closest('.pictures');
    return {role: img.className, width: r.width, height: r.height, top: r.top + window.scrollY, left: r.left,
            loaded: img.complete && img.naturalWidth > 0, alt: img.alt, group: group ? group.dataset.test : ''};
  });
  var out = document.createElement('pre'); out.id = 'qkv-measured'; out.textContent = JSON.stringify(boxes);
  document.body.appendChild(out);
});
</script>"""

AXE_RUN = """<script>%s</script><script>
axe.run(document, {resultTypes: ['violations']}).then(function (r) {
  var out = document.createElement('pre'); out.id = 'qkv-axe';
  out.textContent = JSON.stringify(r.violations.map(function (v) {
    return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return n.html.slice(0, 120); })};
  }));
  document.body.appendChild(out);
}, function (e) { var out = document.createElement('pre'); out.id = 'qkv-axe'; out.textContent = 'error: ' + e;
                  document.body.appendChild(out); });
</script>"""


@pytest.fixture(scope="module")
def browser() -> str:
    found = find_browser()
    assert found, f"headless Chromium is missing: {SETUP_HINT}"
    return found


@pytest.fixture(scope="module")
def axe() -> str:
    assert AXE.is_file(), f"axe-core is missing ({AXE}): {SETUP_HINT}"
    return AXE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def pages(built_numpy, tmp_path_factory) -> dict[str, str]:
    """Pages of the sample class's mistakes, before and after the due date, and of a file that exits at load."""
    subs = tmp_path_factory.mktemp("class")
    for name in ("ben.py", "cho.py", "dan.py", "fox.py"):
        shutil.copy(SAMPLES / name, subs / name)
    shutil.copy(HOSTILE / "exit_at_load.py", subs / "zed.py")
    run = grade_class(built_numpy.out / "autograder", subs, tmp_path_factory.mktemp("out"), jobs=2, timeout=3)
    bundle = read_bundle(built_numpy.out / "autograder")
    out = {}
    for result in run.results:
        for when, now in (("before", BEFORE), ("after", AFTER)):
            out[f"{result.student}-{when}"] = feedback_html(result, bundle.title, bundle.due, run.isolation,
                                                            bundle=bundle, now=now)
    return out


def dump(browser: str, html: str, extra: str, folder: Path) -> str:
    page = folder / "page.html"
    page.write_text(html.replace("</body>", extra + "</body>"), encoding="utf-8")
    done = subprocess.run(headless_command(browser, folder / "profile") + [
        # no scrollbar, as in the screenshot: the page is laid out the same 1000 pixels wide in both, so a line
        # that wraps in one wraps in the other and the measured boxes are where the screenshot paints them
        f"--window-size={WIDTH},900", "--hide-scrollbars", "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def read_back(dom: str, element: str) -> object:
    found = re.search(rf'<pre id="{element}">(.*?)</pre>', dom, re.S)
    assert found, f"the page's script did not report back ({element})"
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    assert not text.startswith("error:"), text
    return json.loads(text)


def measured(browser: str, html: str, folder: Path) -> list[dict]:
    return read_back(dump(browser, html, MEASURE, folder), "qkv-measured")  # type: ignore[return-value]


@pytest.mark.parametrize("name", ["ben-before", "ben-after", "cho-after", "dan-after", "fox-after"])
def test_every_matrix_is_drawn_large_with_its_colour_scale(browser, pages, name, tmp_path):
    boxes = measured(browser, pages[name], tmp_path)
    drawn = [b for b in boxes if b["role"] in ("matrix", "mask")]
    scales = [b for b in boxes if b["role"] == "scale"]
    if name.startswith("fox"):  # its failures have no matrix to draw: no pictures, and no empty frames
        assert not boxes
        return
    assert drawn and scales, boxes
    for box in drawn + scales:
        assert box["loaded"], f"an image did not load: {box['alt'][:80]}"
        assert box["alt"].strip(), "an image without alt text"
    for box in drawn:
        assert min(box["width"], box["height"]) >= 150, box
        assert box["left"] + box["width"] <= WIDTH, f"a picture runs off the page: {box}"
    # each group of pictures (one failed test's) has its colour scale, wide enough to read
    for test in {b["group"] for b in drawn}:
        assert any(s["group"] == test and s["width"] >= 200 and s["height"] >= 30 for s in scales), test


def test_the_colour_scales_appear_in_the_screenshot(browser, pages, tmp_path):
    html = pages["ben-after"]
    boxes = measured(browser, html, tmp_path)
    height = int(max(b["top"] + b["height"] for b in boxes)) + 40
    page, shot = tmp_path / "shot.html", tmp_path / "shot.png"
    page.write_text(html, encoding="utf-8")
    done = subprocess.run(headless_command(browser, tmp_path / "profile2") + [
        f"--window-size={WIDTH},{height}", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    for box in (b for b in boxes if b["role"] == "scale"):
        top, left = int(box["top"]), int(box["left"])
        region = pixels[top:top + int(box["height"]), left:left + int(box["width"])].reshape(-1, 3)
        stops = CIVIDIS if "dark blue" in box["alt"] else PURPLE_ORANGE
        for end in (stops[0], stops[-1]):  # both ends of the colour map are painted where the scale is
            assert (np.abs(region - np.array(end)).max(axis=1) <= 12).sum() >= 20, (box["alt"], end)


@pytest.mark.parametrize("name", ["ben-before", "ben-after", "cho-after", "dan-after", "zed-before"])
def test_axe_finds_no_serious_accessibility_violation(browser, axe, pages, name, tmp_path):
    violations = read_back(dump(browser, pages[name], AXE_RUN % axe, tmp_path), "qkv-axe")
    serious = [v for v in violations if v["impact"] in ("serious", "critical")]  # type: ignore[union-attr]
    assert not serious, json.dumps(serious, indent=1)[:3000]


def test_axe_does_find_violations_where_there_are_some(browser, axe, tmp_path):
    """The check above can fail: a picture without alt text and grey-on-grey text are serious violations."""
    bad = ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title></head><body><main>'
           '<h1>t</h1><img src="data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=">'
           '<p style="color:#bbb;background:#ccc">hard to read</p></main></body></html>')
    found = {v["id"]: v["impact"] for v in read_back(dump(browser, bad, AXE_RUN % axe, tmp_path), "qkv-axe")}
    assert found.get("image-alt") == "critical" and found.get("color-contrast") == "serious", found
