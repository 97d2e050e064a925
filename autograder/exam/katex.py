"""KaTeX for offline pages: the KaTeX installed on this machine in; its script and its style, with the fonts inlined
as data, out.

Found in `$QKV_KATEX_DIR` or Debian's libjs-katex (`/usr/share/javascript/katex`,
installed by `make setup`). Only the woff2 fonts are inlined: every browser that
runs KaTeX reads them, and the page stays one file of about a megabyte.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import QkvError

DEBIAN_KATEX = Path("/usr/share/javascript/katex")
INSTALL_HINT = "apt-get install libjs-katex (or run `make setup` as root, or set QKV_KATEX_DIR to KaTeX's dist folder)"
_FONT_SOURCE = re.compile(r"src:url\(fonts/([\w-]+\.woff2)\)[^;}]*")


@dataclass(frozen=True)
class KatexAssets:
    script: str
    style: str


def katex_dir() -> Path | None:
    candidates = [Path(os.environ["QKV_KATEX_DIR"])] if os.environ.get("QKV_KATEX_DIR") else [DEBIAN_KATEX]
    return next((d for d in candidates if (d / "katex.min.js").is_file() and (d / "katex.min.css").is_file()), None)


def inline_fonts(css: str, fonts: Path) -> str:
    def data_uri(match: re.Match) -> str:
        data = base64.b64encode((fonts / match.group(1)).read_bytes()).decode("ascii")
        return f"src:url(data:font/woff2;base64,{data}) format('woff2')"

    return _FONT_SOURCE.sub(data_uri, css)


def load_katex(option: str = "--format html") -> KatexAssets:
    folder = katex_dir()
    if folder is None:
        raise QkvError(option, f"KaTeX, which renders the formulas offline, is not installed: {INSTALL_HINT}")
    try:
        script = (folder / "katex.min.js").read_text(encoding="utf-8")
        style = inline_fonts((folder / "katex.min.css").read_text(encoding="utf-8"), folder / "fonts")
    except OSError as err:
        raise QkvError(str(folder), f"cannot read KaTeX: {err.strerror} ({err.filename})") from None
    # a literal "</" would end the inline <script> early
    return KatexAssets(script.replace("</", "<\\/"), style)
