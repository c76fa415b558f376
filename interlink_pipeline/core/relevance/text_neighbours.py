"""Each text field's nearest pages: searched afresh, or kept in a NeighbourStore between steps and runs so a
re-crawl searches only the pages whose text changed."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.ml.ann_search import Approximate
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.ml.page_neighbours import (
    NEIGHBOUR_MARGIN,
    Increment,
    nearest_pages,
    neighbour_state,
)


@dataclass(frozen=True)
class NeighbourStore:
    """Where each text field's nearest pages are kept between steps and runs, so the ranker, the candidates
    and the backtest search a field once, and a re-crawl searches only the pages whose text changed."""

    folder: Path
    page_ids: list[str]  # per row
    model: str  # the embedding model: another model, another search

    def search(
        self,
        name: str,
        vectors: np.ndarray,
        texts: list[str | None],
        k: int,
        groups: dict[str, np.ndarray] | None = None,
        approximate: Approximate | None = None,
    ) -> Increment:
        """Update the field's kept lists (see page_neighbours.nearest_pages: exact, or `approximate` on a
        large site where its recall holds) and return what it took.

        Each page's neighbours are searched among all pages with the field, or with `groups` ({group key:
        page rows}) among its own group's pages only (a page's siblings under one parent)."""
        groups = {"": rows_with_text(vectors)} if groups is None else groups
        path = self.path(name)
        previous = pl.read_parquet(path) if path.exists() else None
        if previous is not None and "group" not in previous.columns:
            previous = previous.with_columns(pl.lit("").alias("group"))
        states, increments = [], []
        for group, rows in groups.items():
            hashes = pl.Series([hashlib.sha1((texts[i] or "").encode()).hexdigest() for i in rows])
            ids = pl.Series(self.page_ids, dtype=pl.String).gather(rows)
            kept = None if previous is None else previous.filter(pl.col("group") == group)
            idx, scores, floors, increment = nearest_pages(
                vectors[rows],
                k + 1 + NEIGHBOUR_MARGIN,
                ids,
                hashes,
                self.model,
                kept,
                approximate=approximate,
            )
            increments.append(increment)
            states.append(
                neighbour_state(ids, hashes, self.model, idx, scores, floors).with_columns(
                    pl.lit(group).alias("group")
                )
            )
        increment = Increment.combined(increments)
        gone = previous is not None and bool(set(previous["group"].unique()) - set(groups))
        if increment.mode == "incremental" and not (
            increment.pages_searched or increment.pages_removed or gone
        ):
            return increment  # nothing moved: the kept lists stand as they are
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")  # steps at once never share one
        pl.concat(states).write_parquet(partial)
        os.replace(partial, path)  # a killed run leaves the last complete lists
        return increment

    def pairs(self, name: str, k: int) -> pl.DataFrame:
        """source, target (page rows), score: each page's k+1 nearest kept pages."""
        lists = (
            pl.read_parquet(self.path(name), columns=["page_id", "neighbour_page_ids", "scores"])
            .with_columns(pl.col("neighbour_page_ids", "scores").list.head(k + 1))
            .explode("neighbour_page_ids", "scores")
            .drop_nulls("scores")
        )
        rows = pl.DataFrame({"id": self.page_ids, "row": np.arange(len(self.page_ids), dtype=np.int64)})
        return (
            lists.join(rows.rename({"id": "page_id", "row": "source"}), on="page_id")
            .join(rows.rename({"id": "neighbour_page_ids", "row": "target"}), on="neighbour_page_ids")
            .select("source", "target", "scores")
        )

    def matrix(self, name: str, k: int) -> sparse.csr_matrix:
        """The field's k+1 nearest pages per page as a page x page matrix of scores."""
        n = len(self.page_ids)
        found = self.pairs(name, k)
        return sparse.csr_matrix(
            (found["scores"].to_numpy(), (found["source"].to_numpy(), found["target"].to_numpy())),
            shape=(n, n),
        )

    def path(self, name: str) -> Path:
        return self.folder / f"{name}_neighbours.parquet"


def neighbour_matrix(vectors: np.ndarray, k: int) -> sparse.csr_matrix:
    """Each page's k nearest other pages by cosine (row: page; pages without the field have none)."""
    n = len(vectors)
    present = rows_with_text(vectors)
    if len(present) < 2:
        return sparse.csr_matrix((n, n), dtype=np.float32)
    idx, scores = exact_top(vectors[present], vectors[present], k + 1, query_ids=np.arange(len(present)))
    rows = np.repeat(np.arange(len(present)), idx.shape[1])
    keep = idx.ravel() != rows  # the page itself
    return sparse.csr_matrix(
        (scores.ravel()[keep], (present[rows[keep]], present[idx.ravel()[keep]])), shape=(n, n)
    )


def rows_with_text(vectors: np.ndarray) -> np.ndarray:
    """The rows whose field has text (an empty field embeds as a zero row)."""
    return np.flatnonzero(np.any(vectors, axis=1))


def similar_pairs(neighbours: dict[str, sparse.csr_matrix]) -> pl.DataFrame:
    """Every page's nearest pages by each text field."""
    frames = []
    for matrix in neighbours.values():
        coo = matrix.tocoo()
        frames.append(pl.DataFrame({"source": coo.row.astype(np.int64), "target": coo.col.astype(np.int64)}))
    return pl.concat(frames) if frames else pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64})
