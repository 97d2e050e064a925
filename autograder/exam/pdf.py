"""PDF through a real browser: an HTML page (text) in, the PDF that headless Chromium prints from it (bytes) out.

Chromium runs KaTeX before printing, so the PDF shows the same formulas as the
page. It stamps the time into the PDF; the stamp is replaced by a fixed one of
the same length (so the cross-reference offsets stay right) and the same
arguments give the same bytes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from autograder.errors import QkvError

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "apt-get install chromium (or run `make setup` as root)"
# the machine has no network: without these Chromium keeps trying to reach Google's services
HEADLESS_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-default-apps", "--mute-audio",
)
PRINT_TIMEOUT_S = 120
_PDF_DATE = re.compile(rb"\(D:\d{14}")
_NODE_ID = re.compile(rb"\(node(\d{8})\)")


def find_browser() -> str | None:
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def headless_command(browser: str, profile: Path) -> list[str]:
    return [browser, *HEADLESS_FLAGS, f"--user-data-dir={profile}"]


def fixed_dates(pdf: bytes) -> bytes:
    """Each (D:YYYYMMDDhhmmss...) date stamped as 2000-01-01 00:00:00, its time zone kept, at the same length."""
    return _PDF_DATE.sub(b"(D:20000101000000", pdf)


def stable_node_ids(pdf: bytes) -> bytes:
    """The tagged PDF's structure ids (node00000039) numbered 1, 2, ... in their own order, at the same length.

    Chromium numbers them from a counter that differs between runs (a table's header cells came out as
    node00000011 in one run and node00000039 in the next); keeping their order keeps the id tree sorted,
    keeping their length keeps every byte offset of the file.
    """
    ranks = {number: rank for rank, number in enumerate(sorted(set(_NODE_ID.findall(pdf))), 1)}
    return _NODE_ID.sub(lambda m: b"(node%08d)" % ranks[m.group(1)], pdf)


def print_pdf(html: str) -> bytes:
    browser = find_browser()
    if browser is None:
        raise QkvError("--format pdf", f"printing a PDF needs headless Chromium, which is not installed: {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="qkv-pdf-") as tmp:
        page, pdf = Path(tmp) / "page.html", Path(tmp) / "page.pdf"
        page.write_text(html, encoding="utf-8")
        command = headless_command(browser, Path(tmp) / "profile") + [
            "--virtual-time-budget=10000", "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri()]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=PRINT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise QkvError(browser, f"printing the PDF took more than {PRINT_TIMEOUT_S} s") from None
        if not pdf.is_file() or not pdf.read_bytes().startswith(b"%PDF"):
            last = next((line for line in reversed(run.stderr.splitlines()) if line.strip()), f"exit code {run.returncode}")
            raise QkvError(browser, f"printing the PDF failed: {last.strip()[:200]}")
        return stable_node_ids(fixed_dates(pdf.read_bytes()))
