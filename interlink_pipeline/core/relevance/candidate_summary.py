"""What a run tells of a candidates build, gathered a chunk at a time (a full build never holds its rows):
counts per source page and origins, and the most probable rows."""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.frames import owned

KEY = ("source_page_id", "target_page_id")  # an ml.link_candidates row's pair
LIKELY = 0.5  # a probability the run's metadata counts as a likely link
PREVIEW_ROWS = 15
_COUNTS = {"source_page_id": pl.String, "origins": pl.String, "candidates": pl.UInt32, "likely": pl.UInt32}
_TOP = {
    "source_page_id": pl.String,
    "target_page_id": pl.String,
    "probability": pl.Float32,
    "origins": pl.String,
}


class CandidateSummary:
    """What a run tells of a build's rows (ml.link_candidates rows without the site), gathered a chunk at
    a time so that a full build never holds its rows: counts per source page and origins, and the most
    probable rows."""

    def __init__(self) -> None:
        self._counts: list[pl.DataFrame] = []
        self._top: list[pl.DataFrame] = []

    def add(self, rows: pl.DataFrame) -> None:
        self._counts.append(
            rows.group_by("source_page_id", "origins").agg(
                pl.len().alias("candidates"), (pl.col("probability") >= LIKELY).sum().alias("likely")
            )
        )
        self._top.append(
            owned(
                rows.select(*KEY, "probability", "origins")
                .sort("probability", descending=True, maintain_order=True)
                .head(PREVIEW_ROWS)
            )
        )

    def _all(self) -> pl.DataFrame:
        if len(self._counts) != 1:  # the chunks' counts, joined once
            self._counts = [pl.concat(self._counts) if self._counts else pl.DataFrame(schema=_COUNTS)]
        return self._counts[0]

    @property
    def candidates(self) -> int:
        return int(self._all()["candidates"].sum())

    @property
    def likely(self) -> int:
        return int(self._all()["likely"].sum())

    def per_source(self) -> pl.DataFrame:
        """source_page_id, candidates: the pages with candidates."""
        return self._all().group_by("source_page_id").agg(pl.col("candidates").sum())

    def by_origin(self) -> pl.DataFrame:
        """origins, candidates: how many candidates each signal proposed (a pair several proposed counts
        for each), the most first."""
        return (
            self._all()
            .group_by("origins")
            .agg(pl.col("candidates").sum())
            .with_columns(pl.col("origins").str.split("+"))
            .explode("origins")
            .group_by("origins")
            .agg(pl.col("candidates").sum())
            .sort(["candidates", "origins"], descending=[True, False])
        )

    def most_probable(self, pages: pl.DataFrame) -> pl.DataFrame:
        """The PREVIEW_ROWS most probable candidates, by page names (title, else H1, else URL)."""
        top = pl.concat(self._top) if self._top else pl.DataFrame(schema=_TOP)
        names = pages.select("page_id", pl.coalesce("title", "h1", "url").alias("name"))
        return (
            top.sort("probability", descending=True, maintain_order=True)
            .head(PREVIEW_ROWS)
            .join(names.rename({"page_id": "source_page_id", "name": "on_page"}), on="source_page_id")
            .join(names.rename({"page_id": "target_page_id", "name": "link_to"}), on="target_page_id")
            .select("on_page", "link_to", pl.col("probability").round(3), "origins")
        )
