"""Pictures of matrices a student can read: a picture record (grade/matrices.py) in, SVG images as data URIs out.

For one failed test: the student's matrix beside the expected one on one shared
colour scale (0 to 1 for attention weights), the scale itself as a legend, the
difference (yours minus expected, on a diverging scale centred on 0), and the
test's mask when it has one. Small matrices get their numbers printed in the
cells, in black or white, whichever contrasts more with the cell. Colours are
colour-blind-safe maps (cividis; purple-orange for differences). Every image
has alt text that says what it shows in words and numbers, so the page reads
without images. Plain string formatting, no plotting library: a page of
pictures costs well under a millisecond each, and works offline.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

# matplotlib's cividis and PuOr_r, sampled at 9 even steps
CIVIDIS = ((0, 34, 78), (26, 56, 111), (67, 78, 108), (97, 101, 111), (125, 124, 120), (155, 148, 118),
           (188, 174, 108), (222, 201, 88), (254, 232, 56))
PURPLE_ORANGE = ((45, 0, 75), (95, 58, 145), (153, 144, 191), (207, 207, 229), (247, 247, 246), (254, 213, 159),
                 (238, 155, 57), (189, 97, 9), (127, 59, 8))
NOT_FINITE = (190, 190, 190)
MIN_SHORT = 150  # px: the short side of every matrix picture, however few its rows
MAX_LONG = 300  # px: the long side, however many its columns (two pictures fit side by side)
NUMBERS_UP_TO = 64  # cells: matrices this small show their numbers
MARGIN = 22  # px for the row and column numbers


@dataclass(frozen=True)
class Scale:
    low: float
    high: float
    stops: tuple[tuple[int, int, int], ...]
    words: tuple[str, str]  # what the two ends look like, for alt text

    def colour(self, x: Optional[float]) -> tuple[int, int, int]:
        if x is None:
            return NOT_FINITE
        span = self.high - self.low
        t = 0.5 if span <= 0 else min(1.0, max(0.0, (x - self.low) / span))
        at = t * (len(self.stops) - 1)
        i = min(int(at), len(self.stops) - 2)
        f = at - i
        a, b = self.stops[i], self.stops[i + 1]
        return tuple(round(a[k] + (b[k] - a[k]) * f) for k in range(3))  # type: ignore[return-value]


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#%02x%02x%02x" % rgb


def _ink(rgb: tuple[int, int, int]) -> str:
    """Black or white text, whichever has the higher WCAG contrast on this fill."""
    def channel(c: int) -> float:
        level = c / 255
        return level / 12.92 if level <= 0.03928 else ((level + 0.055) / 1.055) ** 2.4
    lum = 0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2])
    return "#000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#fff"


def number(x: Optional[float]) -> str:
    if x is None:
        return "NaN"
    if abs(x) < 5e-3:
        return "0"
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.3g}"


def _cell_size(rows: int, cols: int) -> tuple[int, int]:
    side = max(28, math.ceil(MIN_SHORT / min(rows, cols)))
    return max(1, min(side, MAX_LONG // cols)), max(1, min(side, MAX_LONG // rows))


def _uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


Matrix = tuple[tuple[Optional[float], ...], ...]


@lru_cache(maxsize=4096)  # the expected matrices repeat on every page of a class
def matrix_image(cells: Matrix, scale: Scale, mask: Optional[tuple[tuple[bool, ...], ...]] = None) -> str:
    """A matrix as an SVG data URI: one coloured cell per entry, row and column numbers around it."""
    rows, cols = len(cells), len(cells[0])
    w, h = _cell_size(rows, cols)
    show = rows * cols <= NUMBERS_UP_TO
    font = max(9, min(16, int(min(w, h) * 0.34)))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{MARGIN + cols * w}" height="{MARGIN + rows * h}" '
             f'font-family="sans-serif">', '<rect width="100%" height="100%" fill="#fff"/>']
    for j in range(cols):
        parts.append(f'<text x="{MARGIN + j * w + w / 2:g}" y="15" font-size="11" text-anchor="middle" '
                     f'fill="#333">{j + 1}</text>')
    for i, row in enumerate(cells):
        y = MARGIN + i * h
        parts.append(f'<text x="{MARGIN - 5}" y="{y + h / 2 + 4:g}" font-size="11" text-anchor="end" '
                     f'fill="#333">{i + 1}</text>')
        for j, x in enumerate(row):
            rgb = scale.colour(x)
            parts.append(f'<rect x="{MARGIN + j * w}" y="{y}" width="{w}" height="{h}" fill="{_hex(rgb)}" '
                         'stroke="#fff" stroke-width="1"/>')
            if mask is not None and not mask[i][j]:  # masked: a diagonal line, readable in any colour
                parts.append(f'<line x1="{MARGIN + j * w + 3}" y1="{y + h - 3}" x2="{MARGIN + (j + 1) * w - 3}" '
                             f'y2="{y + 3}" stroke="{_ink(rgb)}" stroke-opacity=".5" stroke-width="1.5"/>')
            if show:
                parts.append(f'<text x="{MARGIN + j * w + w / 2:g}" y="{y + h / 2 + font * 0.35:g}" '
                             f'font-size="{font}" text-anchor="middle" fill="{_ink(rgb)}">{number(x)}</text>')
    parts.append("</svg>")
    return _uri("".join(parts))


@lru_cache(maxsize=256)
def mask_image(mask: tuple[tuple[bool, ...], ...]) -> str:
    """The mask: light cells (✓) may be attended to, dark cells (×) are masked."""
    rows, cols = len(mask), len(mask[0])
    w, h = _cell_size(rows, cols)
    font = max(10, min(20, int(min(w, h) * 0.45)))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{MARGIN + cols * w}" height="{MARGIN + rows * h}" '
             f'font-family="sans-serif">', '<rect width="100%" height="100%" fill="#fff"/>']
    for j in range(cols):
        parts.append(f'<text x="{MARGIN + j * w + w / 2:g}" y="15" font-size="11" text-anchor="middle" '
                     f'fill="#333">{j + 1}</text>')
    for i, row in enumerate(mask):
        y = MARGIN + i * h
        parts.append(f'<text x="{MARGIN - 5}" y="{y + h / 2 + 4:g}" font-size="11" text-anchor="end" '
                     f'fill="#333">{i + 1}</text>')
        for j, allowed in enumerate(row):
            fill, ink, mark = ("#f4f4f4", "#222", "✓") if allowed else ("#3a3a3a", "#fff", "×")
            parts.append(f'<rect x="{MARGIN + j * w}" y="{y}" width="{w}" height="{h}" fill="{fill}" '
                         'stroke="#999" stroke-width="1"/>')
            parts.append(f'<text x="{MARGIN + j * w + w / 2:g}" y="{y + h / 2 + font * 0.35:g}" font-size="{font}" '
                         f'text-anchor="middle" fill="{ink}">{mark}</text>')
    parts.append("</svg>")
    return _uri("".join(parts))


@lru_cache(maxsize=256)
def scale_image(scale: Scale) -> str:
    """The colour scale: a bar from low to high with its ends and middle labelled."""
    width, bar = 300, 18
    stops = "".join(f'<stop offset="{i / (len(scale.stops) - 1):.3f}" stop-color="{_hex(c)}"/>'
                    for i, c in enumerate(scale.stops))
    ticks = []
    for frac, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        value = scale.low + frac * (scale.high - scale.low)
        x = 10 + frac * (width - 20)
        ticks.append(f'<line x1="{x:g}" y1="{6 + bar}" x2="{x:g}" y2="{10 + bar}" stroke="#333"/>'
                     f'<text x="{x:g}" y="{24 + bar}" font-size="12" text-anchor="{anchor}" fill="#222">'
                     f'{_signed(value) if scale.low < 0 else number(value)}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{30 + bar}" font-family="sans-serif">'
           f'<defs><linearGradient id="g">{stops}</linearGradient></defs>'
           '<rect width="100%" height="100%" fill="#fff"/>'
           f'<rect x="10" y="6" width="{width - 20}" height="{bar}" fill="url(#g)" stroke="#666"/>'
           + "".join(ticks) + "</svg>")
    return _uri(svg)


def _signed(x: Optional[float]) -> str:
    if x is None:
        return "NaN"
    return "0" if abs(x) < 5e-3 else ("+" if x > 0 else "") + number(x)


# ------------------------------------------------------------------ alt text


def describe(cells: Matrix, formatter=number) -> str:
    """A matrix in words: every row when it is small, else where its largest and smallest entries are."""
    rows, cols = len(cells), len(cells[0])
    if rows * cols <= NUMBERS_UP_TO:
        return "; ".join(f"row {i + 1}: " + ", ".join(formatter(x) for x in row) for i, row in enumerate(cells))
    finite = [(x, i, j) for i, row in enumerate(cells) for j, x in enumerate(row) if x is not None]
    if not finite:
        return "no finite entries"
    top, low = max(finite), min(finite)
    return (f"largest {formatter(top[0])} at row {top[1] + 1}, column {top[2] + 1}; "
            f"smallest {formatter(low[0])} at row {low[1] + 1}, column {low[2] + 1}")


def describe_mask(mask: tuple[tuple[bool, ...], ...]) -> str:
    lines = []
    for i, row in enumerate(mask):
        allowed = [str(j + 1) for j, ok in enumerate(row) if ok]
        lines.append(f"query {i + 1} may attend to " + (("key " if len(allowed) == 1 else "keys ") + ", ".join(allowed)
                                                        if allowed else "no key"))
    return "; ".join(lines)


# ------------------------------------------------------------------ a test's pictures


@dataclass(frozen=True)
class Image:
    uri: str
    alt: str
    caption: str
    role: str  # "matrix", "scale" or "mask": what the page's tests and styles look for
    group: str = "compare"  # pictures read together: "compare" (yours, expected, scale) or "difference"


def slice_words(record: dict) -> str:
    """Which matrix of a larger array the pictures show ("slice [0, 0, :, :] of the 2 × 8 × 10 × 10 array"), or ""
    for a matrix that is the whole output; a record written before shapes were kept says how many there were."""
    shape = record.get("shape") or []
    if len(shape) > 2:
        index = ", ".join(["0"] * (len(shape) - 2) + [":", ":"])
        return f"slice [{index}] of the {' × '.join(str(n) for n in shape)} array"
    return f"the first of {record['of']} matrices" if record.get("of") else ""


def _matrix(rows: Any) -> Matrix:
    return tuple(tuple(None if x is None else float(x) for x in row) for row in rows)


def test_pictures(record: dict[str, Any], test_name: str) -> list[Image]:
    """The images of one failed test, in reading order: yours, expected, their scale, difference, its scale, mask."""
    got, want = _matrix(record["got"]), _matrix(record["want"])
    if not got or not got[0] or len(got) != len(want) or len(got[0]) != len(want[0]):
        return []
    weights = record.get("kind", "weights") == "weights"
    what = "attention weights" if weights else "output"
    finite = [x for m in (got, want) for row in m for x in row if x is not None]
    if weights:
        low, high = 0.0, max(1.0, max(finite, default=1.0))
    else:
        low, high = min(finite, default=0.0), max(finite, default=1.0)
    scale = Scale(low, high, CIVIDIS, ("dark blue", "yellow"))
    size = f"{len(got)} by {len(got[0])}"
    shown = slice_words(record)
    first = f", {shown}" if shown else ""
    mask = tuple(tuple(bool(v) for v in row) for row in record["mask"]) if record.get("mask") else None
    images = [
        Image(matrix_image(got, scale, mask), f"Your {what} for test {test_name}, {size}{first}: {describe(got)}",
              f"your {what}{first}", "matrix"),
        Image(matrix_image(want, scale, mask), f"Expected {what} for test {test_name}, {size}{first}: "
                                               f"{describe(want)}", f"expected {what}{first}", "matrix"),
        Image(scale_image(scale), f"Colour scale of both pictures: {number(low)} is {scale.words[0]}, "
                                  f"{number(high)} is {scale.words[1]}", "colour scale", "scale"),
    ]
    diff = tuple(tuple(None if g is None or w is None else round(g - w, 4) for g, w in zip(gr, wr))
                 for gr, wr in zip(got, want))
    spread = max((abs(x) for row in diff for x in row if x is not None), default=0.0)
    if spread > 0:
        bound = float(f"{spread:.2g}") if float(f"{spread:.2g}") >= spread else spread
        diverging = Scale(-bound, bound, PURPLE_ORANGE, ("purple", "orange"))
        images += [
            Image(matrix_image(diff, diverging), f"Your {what} minus the expected ones, {size}: "
                                                 f"{describe(diff, _signed)}", "yours minus expected", "matrix",
                  "difference"),
        ]
    if mask is not None:
        images.append(Image(mask_image(mask), f"The mask of test {test_name}: {describe_mask(mask)}",
                            "mask: ✓ may attend, × masked", "mask", "difference"))
    if spread > 0:
        images.append(Image(scale_image(diverging), f"Colour scale of the difference: {_signed(-bound)} (yours "
                                                    f"lower) is purple, 0 is white, {_signed(bound)} (yours higher) "
                                                    "is orange", "difference scale", "scale", "difference"))
    return images

