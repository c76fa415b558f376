"""The backtest's figures as the UI shows them: ours against the same-budget baseline, as numbers, a table
and bars, by reason, for the orphan rescues and with and without editors' decisions."""

import json

import polars as pl
from dagster import MetadataValue

from interlink_pipeline.core.relevance.backtest_runs import thin_measurement
from interlink_pipeline.core.relevance.intervals import interval_text
from interlink_pipeline.defs.previews import table_preview


def _bar(value: float, top: float, width: int = 30) -> str:
    return "█" * max(1, round(width * value / top)) if value > 0 and top > 0 else ""


# the comparison table's rows: our figure and the baseline's
OURS = ("plan_precision", "plan_recall", "candidate_precision_at_k", "candidate_recall_at_k")
BASELINE = ("baseline_precision", "baseline_recall", "baseline_precision_at_k", "baseline_recall_at_k")


def backtest_figures(row: dict) -> dict:
    """The metadata of a backtest row: ours against the baseline, as figures, a table and bars."""
    k = row["k"]
    intervals = json.loads(row.get("intervals") or "{}")  # none in a row measured before them
    comparison = pl.DataFrame(
        {
            "figure": ["plan precision", "plan recall", f"candidate precision@{k}", f"candidate recall@{k}"],
            "ours": [row[f] for f in OURS],
            "baseline": [row[f] for f in BASELINE],
            "ours 95%": [interval_text(intervals.get(f)) for f in OURS],
            "baseline 95%": [interval_text(intervals.get(f)) for f in BASELINE],
        }
    ).with_columns(
        (pl.col("ours") / pl.col("baseline")).round(2).alias("ratio"), pl.col("ours", "baseline").round(4)
    )
    top = max(comparison["ours"].max(), comparison["baseline"].max())
    chart = "<br>".join(
        f"`{name:<24}` ours {_bar(ours, top)} {ours:.3f}<br>`{'':<24}` base {_bar(base, top)} {base:.3f}"
        for name, ours, base in comparison.select("figure", "ours", "baseline").iter_rows()
    )
    by_reason = pl.DataFrame(json.loads(row["precision_by_reason"]))
    warning = thin_measurement(row["hidden_links"], row["plan_precision"], intervals.get(OURS[0]))
    thin = {"warning": warning} if warning else {}
    return {
        **thin,
        "hidden_links": row["hidden_links"],
        "plan_links": row["plan_links"],
        "plan_precision": MetadataValue.float(row["plan_precision"]),
        "plan_recall": MetadataValue.float(row["plan_recall"]),
        "baseline_precision": MetadataValue.float(row["baseline_precision"]),
        "candidate_precision_at_k": MetadataValue.float(row["candidate_precision_at_k"]),
        "baseline_precision_at_k": MetadataValue.float(row["baseline_precision_at_k"]),
        "candidate_coverage": MetadataValue.float(row["candidate_coverage"]),
        "ours_vs_baseline": table_preview(comparison, 10),
        "chart": MetadataValue.md(chart),
        "precision_by_reason": table_preview(
            by_reason.with_columns(
                pl.col(c).round(3)
                for c in ("precision", "recall", "known_precision", "reachable_precision", "mean_probability")
                if c in by_reason.columns
            ),
            10,
        ),
        **_orphan_figures(row),
        **_decision_figures(row),
        "ranker": row["ranker"],
    }


def _decision_figures(row: dict) -> dict:
    """With editors' decisions: the plan's precision with the ranker that learned from them and without."""
    without = row.get("plan_precision_without_decisions")
    if without is None:
        return {"decisions_learned": row.get("decisions_learned") or 0}
    return {
        "decisions_learned": row["decisions_learned"],
        "plan_precision_without_decisions": MetadataValue.float(without),
        "decisions_gain": MetadataValue.float(row["plan_precision"] - without),
    }


def _orphan_figures(row: dict) -> dict:
    """The orphan backtest's figures, when it made orphans: its rescues' precision against the baseline."""
    if not row.get("orphaned_pages"):
        return {}
    rescue, baseline = row["orphan_rescue_precision"], row["orphan_baseline_precision"]
    return {
        "orphaned_pages": row["orphaned_pages"],
        "orphan_rescues": row["orphan_rescues"],
        "orphan_rescue_precision": MetadataValue.float(rescue) if rescue is not None else "no rescue",
        "orphan_baseline_precision": MetadataValue.float(baseline),
        "orphan_rescue_precision_95%": interval_text(
            json.loads(row.get("intervals") or "{}").get("orphan_rescue_precision")
        ),
    }
