"""The report's charts as inline SVG drawn at render time: grouped bars and the topic map (with a tooltip on
every bar and point, and a legend that picks out a topic), and the hubs as a list. Plotly's library was
4.8 MB of a 6.1 MB report for 789 pages; these charts add a few kB per hundred points and need no script to
draw. Geometry is computed here; the markup is templates/charts.html.j2's, which escapes every value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

WIDTH, BAR_HEIGHT, MAP_HEIGHT = 900, 300, 520  # the charts' drawing area, in SVG units
MARGIN = 40  # room for the axes' labels
SERIES_COLOURS = ("#9aa5b1", "#2f80ed")  # before, after


def topic_colour(i: int) -> str:
    """The i-th topic's colour: hues a golden angle apart, so that neighbours in the legend differ most."""
    return f"hsl({i * 137.508 % 360:.0f},{70 - 15 * (i // 24 % 2)}%,{42 + 14 * (i // 12 % 2)}%)"


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    value: int
    series: int
    tooltip: str


def grouped_bars(categories: list[str], series: dict[str, list[int]]) -> dict:
    """Bars for each category, one per series side by side, on a shared scale from zero."""
    top = max((v for values in series.values() for v in values), default=0) or 1
    slot = (WIDTH - 2 * MARGIN) / max(len(categories), 1)
    width = slot * 0.8 / max(len(series), 1)
    bars = []
    for s, (name, values) in enumerate(series.items()):
        for c, (category, value) in enumerate(zip(categories, values, strict=True)):
            height = (BAR_HEIGHT - 2 * MARGIN) * value / top
            x = MARGIN + c * slot + slot * 0.1 + s * width
            bars.append(
                Bar(
                    x, BAR_HEIGHT - MARGIN - height, width, height, value, s, f"{category}, {name}: {value:,}"
                )
            )
    ticks = [(MARGIN + (c + 0.5) * slot, category) for c, category in enumerate(categories)]
    return {"bars": bars, "ticks": ticks, "series": list(series), "colours": SERIES_COLOURS, "width": WIDTH,
            "height": BAR_HEIGHT, "margin": MARGIN, "top": top}  # fmt: skip


def topic_points(frame: pl.DataFrame, xy: np.ndarray, labelled: int) -> dict:
    """The topic map's points (`frame`: title and cluster per row of `xy`), scaled into the drawing area,
    grouped by topic, the largest first; the `labelled` largest topics are named at their median point."""
    span = np.ptp(xy, axis=0) if len(xy) else np.ones(2)
    scaled = (xy - (xy.min(axis=0) if len(xy) else 0)) / np.where(span > 0, span, 1)
    frame = frame.with_columns(
        pl.Series("x", MARGIN / 2 + scaled[:, 0] * (WIDTH - MARGIN)).round(1),
        pl.Series("y", MARGIN / 2 + (1 - scaled[:, 1]) * (MAP_HEIGHT - MARGIN)).round(1),
    )
    sizes = (
        frame.group_by("cluster").len().sort(["len", "cluster"], descending=[True, False], nulls_last=True)
    )
    topics = []
    for i, (label, size) in enumerate(sizes.iter_rows()):
        group = frame.filter(pl.col("cluster").eq_missing(label))
        topics.append(
            {
                "label": label or "no topic",
                "pages": size,
                "colour": topic_colour(i),
                "points": group.select("x", "y", "title").rows(),
                "centre": (group["x"].median(), group["y"].median()) if i < labelled and label else None,
            }
        )
    return {"topics": topics, "width": WIDTH, "height": MAP_HEIGHT}
