"""Small, readable previews of frames for run metadata and logs."""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.numbers import significant


def markdown_table(frame: pl.DataFrame, max_rows: int = 10, max_chars: int = 80) -> str:
    """A markdown table of the first `max_rows` rows: numbers to 4 significant digits, cells cut to
    `max_chars`, pipes escaped."""
    if frame.width == 0:
        return "_(no columns)_"
    shown = frame.head(max_rows)

    def cell(value: object) -> str:
        text = "" if value is None else str(significant(value) if isinstance(value, float) else value)
        text = text.replace("\n", " ").replace("|", "\\|")
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"

    lines = [
        "| " + " | ".join(shown.columns) + " |",
        "| " + " | ".join("---" for _ in shown.columns) + " |",
        *("| " + " | ".join(cell(v) for v in row) + " |" for row in shown.iter_rows()),
    ]
    if frame.height > max_rows:
        lines.append(f"\n_{frame.height - max_rows:,} more rows_")
    return "\n".join(lines)


def counts_table(frame: pl.DataFrame, column: str, label: str = "rows") -> str:
    """Markdown table of value counts of `column`, largest first."""
    counts = frame.group_by(column).len(label).sort([label, column], descending=[True, False])
    return markdown_table(counts, max_rows=50)
