"""The page_embeddings step: embed each distinct page text once per model, through a global cache.

Texts are looked up in `ml.embedding_cache` by (model id, text hash); only the missing ones are embedded,
in chunks that are committed one by one, so a run that dies halfway keeps what it finished and the next run
continues from there. The model is loaded only when something is missing. The site's `ml.page_embeddings`
rows are then rebuilt inside DuckDB from the cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl

from interlink_pipeline.core.encoders import TextEncoder
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.warehouse import (
    ValidationReport,
    append_new_rows,
    query,
    read_site,
    replace_site_rows_from_query,
)

DEFAULT_CHUNK = 20_000

PAGE_VECTORS_SQL = """
SELECT p.site, p.page_id, c.model, c.dim, c.vector
FROM staging.pages p
JOIN ml.embedding_cache c ON c.text_hash = p.text_hash AND c.model = ?
WHERE p.site = ?
"""


@dataclass(frozen=True)
class EmbeddingRun:
    pages: int
    distinct_texts: int
    cache_hits: int
    embedded: int
    embed_seconds: float
    chunks: int
    report: ValidationReport
    encoder: TextEncoder | None  # None when every text was cached (the model was not loaded)
    load_seconds: float

    @property
    def texts_per_second(self) -> float:
        return self.embedded / self.embed_seconds if self.embed_seconds else 0.0


def vectors_frame(model_id: str, hashes: pl.Series, vectors: np.ndarray) -> pl.DataFrame:
    """Rows of ml.embedding_cache for freshly embedded texts."""
    dim = vectors.shape[1]
    return pl.DataFrame(
        {
            "model": pl.Series([model_id] * len(hashes), dtype=pl.String),
            "text_hash": hashes,
            "dim": pl.Series([dim] * len(hashes), dtype=pl.Int32),
            "vector": pl.Series(vectors, dtype=pl.Array(pl.Float32, dim)).cast(pl.List(pl.Float32)),
            "created_at": pl.Series(
                [datetime.now(UTC).replace(tzinfo=None)] * len(hashes), dtype=pl.Datetime("us")
            ),
        }
    )


def embed_site(
    warehouse: str | Path,
    site: str,
    model_id: str,
    load_encoder: Callable[[], TextEncoder],
    *,
    chunk_size: int = DEFAULT_CHUNK,
    progress: Callable[[int, int], None] | None = None,
) -> EmbeddingRun:
    """Embed the site's page texts missing from the cache, then rebuild its ml.page_embeddings rows."""
    pages = read_site(warehouse, "staging.pages", site, ["text_hash", "text"])
    if pages.is_empty():
        raise InputError(f"staging.pages has no rows for {site}: materialise pages for this site first.")
    distinct = pages.unique("text_hash", keep="first", maintain_order=True)
    cached = query(
        warehouse,
        "SELECT c.text_hash FROM ml.embedding_cache c JOIN wanted w USING (text_hash) WHERE c.model = ?",
        [model_id],
        {"wanted": distinct.select("text_hash")},
    )["text_hash"]
    todo = distinct.filter(~pl.col("text_hash").is_in(cached.implode()))
    encoder = None
    load_seconds = embed_seconds = 0.0
    chunks = 0
    if todo.height:
        started = time.monotonic()
        encoder = load_encoder()
        load_seconds = time.monotonic() - started
        if encoder.model_id != model_id:
            raise ValueError(f"the loaded model is {encoder.model_id}, not {model_id}")
    for chunk in todo.iter_slices(chunk_size):
        started = time.monotonic()
        vectors = encoder.encode(chunk["text"].to_list())
        embed_seconds += time.monotonic() - started
        rows = vectors_frame(model_id, chunk["text_hash"], vectors)
        append_new_rows(warehouse, "ml.embedding_cache", rows, key=["model", "text_hash"])
        chunks += 1
        if progress:
            progress(min(chunks * chunk_size, todo.height), todo.height)
    report = replace_site_rows_from_query(
        warehouse, site, "ml.page_embeddings", PAGE_VECTORS_SQL, [model_id, site], expected_rows=pages.height
    )
    return EmbeddingRun(
        pages=pages.height,
        distinct_texts=distinct.height,
        cache_hits=distinct.height - todo.height,
        embedded=todo.height,
        embed_seconds=embed_seconds,
        chunks=chunks,
        report=report,
        encoder=encoder,
        load_seconds=load_seconds,
    )
