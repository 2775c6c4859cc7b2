"""A small SVG line-chart writer, so the stress demo can plot without a plotting library.

``line_charts`` draws one or more panels side by side that share an x axis
label and one legend; each panel has its own y axis. The output is plain SVG 1.1
text (well-formed XML), with a ``<g class="series" data-name=...>`` element per
series so tests and tools can find the data again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence
from xml.sax.saxutils import escape, quoteattr

FONT = "font-family:DejaVu Sans,Verdana,Arial,sans-serif"


@dataclass
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    color: str
    dashed: bool = False


@dataclass
class Panel:
    title: str
    y_label: str
    series: list[Series] = field(default_factory=list)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    ticks = [math.floor(low / step) * step]
    while ticks[-1] < high - step * 1e-9:
        ticks.append(ticks[-1] + step)
    return [round(t, 10) for t in ticks]


def format_tick(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:g}"


def _text(x: float, y: float, content: str, size: int = 12, anchor: str = "middle",
          weight: str = "normal", rotate: bool = False, color: str = "#222") -> str:
    transform = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'font-weight="{weight}" fill="{color}" style="{FONT}"{transform}>{escape(content)}</text>')


def _panel(panel: Panel, left: float, top: float, width: float, height: float,
           x_ticks: list[float], x_label: str) -> list[str]:
    out = [f'<g class="panel" data-title={quoteattr(panel.title)}>']
    ys = [y for s in panel.series for _, y in s.points] or [0.0]
    y_ticks = nice_ticks(min(0.0, min(ys)), max(ys) if max(ys) > 0 else 1.0)
    y_low, y_high = y_ticks[0], y_ticks[-1]
    x_low, x_high = x_ticks[0], x_ticks[-1]

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * width

    def sy(y: float) -> float:
        return top + height - (y - y_low) / (y_high - y_low) * height

    out.append(_text(left + width / 2, top - 14, panel.title, size=14, weight="bold"))
    out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}" '
               'fill="#fcfcfc" stroke="#999" stroke-width="1"/>')
    for y in y_ticks:
        out.append(f'<line x1="{left:.1f}" y1="{sy(y):.1f}" x2="{left + width:.1f}" y2="{sy(y):.1f}" '
                   'stroke="#e3e3e3" stroke-width="1"/>')
        out.append(_text(left - 6, sy(y) + 4, format_tick(y), size=11, anchor="end"))
    for x in x_ticks:
        out.append(f'<line x1="{sx(x):.1f}" y1="{top + height:.1f}" x2="{sx(x):.1f}" '
                   f'y2="{top + height + 4:.1f}" stroke="#666" stroke-width="1"/>')
        out.append(_text(sx(x), top + height + 17, format_tick(x), size=11))
    out.append(_text(left + width / 2, top + height + 36, x_label, size=12))
    out.append(_text(left - 52, top + height / 2, panel.y_label, size=12, rotate=True))
    for index, s in enumerate(panel.series):
        # Earlier series are drawn wider, so a later one on the same values
        # shows as a line inside a line instead of hiding it.
        stroke = 2.0 + 2.5 * (len(panel.series) - 1 - index)
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s.points)
        dash = ' stroke-dasharray="7 4"' if s.dashed else ""
        out.append(f'<g class="series" data-name={quoteattr(s.name)}>')
        out.append(f'<polyline points="{coords}" fill="none" stroke="{s.color}" stroke-width="{stroke:g}"'
                   f' stroke-linejoin="round"{dash}/>')
        for x, y in s.points:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="{stroke / 2 + 1.5:g}" fill="{s.color}">'
                       f'<title>{escape(s.name)}: {y:g} at {x:g}</title></circle>')
        out.append("</g>")
    out.append("</g>")
    return out


def line_charts(panels: Sequence[Panel], *, title: str, x_label: str, subtitle: str = "",
                panel_width: int = 400, panel_height: int = 260) -> str:
    """An SVG document with the panels side by side and one legend below the title."""
    margin_left, gap, margin_right = 80, 90, 30
    top = 110 if subtitle else 95
    width = margin_left + len(panels) * panel_width + (len(panels) - 1) * gap + margin_right
    height = top + panel_height + 60
    xs = [x for p in panels for s in p.series for x, _ in s.points] or [0.0, 1.0]
    x_ticks = nice_ticks(min(xs), max(xs), count=min(10, max(2, int(max(xs) - min(xs)) or 2)))

    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        _text(width / 2, 26, title, size=17, weight="bold"),
    ]
    if subtitle:
        out.append(_text(width / 2, 46, subtitle, size=12, color="#555"))

    # One legend for all panels: the series names of the first panel, in order.
    names: list[tuple[str, str, bool]] = []
    for p in panels:
        for s in p.series:
            if s.name not in [n for n, _, _ in names]:
                names.append((s.name, s.color, s.dashed))
    legend_y = top - 48
    item_width = 190
    x = width / 2 - len(names) * item_width / 2
    out.append('<g class="legend">')
    for name, color, dashed in names:
        dash = ' stroke-dasharray="7 4"' if dashed else ""
        out.append(f'<line x1="{x:.1f}" y1="{legend_y:.1f}" x2="{x + 28:.1f}" y2="{legend_y:.1f}" '
                   f'stroke="{color}" stroke-width="3"{dash}/>')
        out.append(_text(x + 34, legend_y + 4, name, size=12, anchor="start"))
        x += item_width
    out.append("</g>")

    for i, panel in enumerate(panels):
        left = margin_left + i * (panel_width + gap)
        out.extend(_panel(panel, left, top, panel_width, panel_height, x_ticks, x_label))
    out.append("</svg>")
    return "\n".join(out) + "\n"
