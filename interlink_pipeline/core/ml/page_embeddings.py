"""The page_embeddings step: embed each distinct page text once per model, through a global cache.

Texts are looked up in `ml.embedding_cache` by (model id, text hash); only the missing ones are embedded,
in chunks that are committed one by one, so a run that dies halfway keeps what it finished and the next run
continues from there. The model is loaded only when something is missing. Then, inside DuckDB, the site's
`ml.page_embeddings` rows whose page is gone, whose text changed or whose model differs are replaced from
the cache; unchanged rows are not touched, so a re-run costs what changed, not what exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.faults import fault_point
from interlink_pipeline.core.ml.encoders import TextEncoder
from interlink_pipeline.core.ml.int8_check import Int8Check, check_int8, refuse
from interlink_pipeline.core.ml.model_identity import ModelIdentity
from interlink_pipeline.core.warehouse.contract import ValidationReport
from interlink_pipeline.core.warehouse.database import connect, memory_limit, query
from interlink_pipeline.core.warehouse.store import merge_rows, read_site, update_site_rows

DEFAULT_CHUNK = 20_000
# Reading a site's cached vectors, DuckDB keeps what it scanned up to its memory limit (1 GB by default):
# under a small one it streams them. At 100,000 pages: 1.72 -> 1.32 GB peak for the relevance inputs.
CACHE_READ_MEMORY, CACHE_READ_ROWS = "128MB", 20_000

# Pages whose current text has no vector of this model yet (new pages, changed texts, another model).
MARK_FRESH_PAGES = """
CREATE OR REPLACE TEMP TABLE fresh_pages AS
SELECT p.page_id FROM staging.pages p
WHERE p.site = ? AND NOT EXISTS (
    SELECT 1 FROM ml.page_embeddings e
    WHERE e.site = p.site AND e.page_id = p.page_id AND e.text_hash = p.text_hash AND e.model = ?)
"""
DELETE_STALE_VECTORS = """
DELETE FROM ml.page_embeddings e
WHERE e.site = ? AND (
    e.page_id IN (SELECT page_id FROM fresh_pages)
    OR NOT EXISTS (SELECT 1 FROM staging.pages p WHERE p.site = e.site AND p.page_id = e.page_id))
"""
INSERT_FRESH_VECTORS = """
INSERT INTO ml.page_embeddings BY NAME
SELECT p.site, p.page_id, p.text_hash, c.model, c.dim, c.vector
FROM staging.pages p
JOIN fresh_pages USING (page_id)
JOIN ml.embedding_cache c ON c.text_hash = p.text_hash AND c.model = ?
WHERE p.site = ?
"""


@dataclass(frozen=True)
class EmbeddingRun:
    pages: int
    distinct_texts: int
    report: ValidationReport  # report.rows: vectors (re)written this run
    cache_hits: int
    embedded: int
    embed_seconds: float
    chunks: int
    encoder: TextEncoder | None  # None when every text was cached (the model was not loaded)
    load_seconds: float
    model_id: str  # the vectors' model: fp32's where int8 was asked for and its check failed
    int8: Int8Check | None  # the int8 encoder's check against fp32, when it ran

    @property
    def texts_per_second(self) -> float:
        return self.embedded / self.embed_seconds if self.embed_seconds else 0.0


def vectors_frame(model_id: str, hashes: pl.Series, vectors: np.ndarray) -> pl.DataFrame:
    """Rows of ml.embedding_cache for freshly embedded texts."""
    fault_point("embedding-chunk")
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
    int8_falls_back: bool = False,
    chunk_size: int = DEFAULT_CHUNK,
    progress: Callable[[int, int], None] | None = None,
) -> EmbeddingRun:
    """Embed the site's page texts missing from the cache, then rebuild its ml.page_embeddings rows. An int8
    encoder is checked against fp32 first: short of the gate, the step fails, or with `int8_falls_back`
    embeds in fp32."""
    pages = read_site(warehouse, "staging.pages", site, ["text_hash", "text"])
    if pages.is_empty():
        raise InputError(f"staging.pages has no rows for {site}: materialise pages for this site first.")
    distinct = pages.unique("text_hash", keep="first", maintain_order=True)
    filled = fill_cache(
        warehouse,
        model_id,
        distinct,
        load_encoder,
        int8_gate="fall back" if int8_falls_back else "refuse",
        chunk_size=chunk_size,
        progress=progress,
    )
    model_id = filled["model_id"]
    report = update_site_rows(
        warehouse,
        site,
        "ml.page_embeddings",
        [
            (MARK_FRESH_PAGES, [site, model_id]),
            (DELETE_STALE_VECTORS, [site]),
            (INSERT_FRESH_VECTORS, [model_id, site]),
        ],
        changed_rows="page_id IN (SELECT page_id FROM fresh_pages)",
        expected_rows=pages.height,
    )
    return EmbeddingRun(pages=pages.height, distinct_texts=distinct.height, report=report, **filled)


def _uncached(warehouse: str | Path, model_id: str, distinct: pl.DataFrame) -> pl.DataFrame:
    """The rows of `distinct` (text_hash, text) whose vectors ml.embedding_cache lacks for the model."""
    cached = query(
        warehouse,
        "SELECT c.text_hash FROM ml.embedding_cache c JOIN wanted w USING (text_hash) WHERE c.model = ?",
        [model_id],
        {"wanted": distinct.select("text_hash")},
    )["text_hash"]
    return distinct.filter(~pl.col("text_hash").is_in(cached.implode()))


def fill_cache(
    warehouse: str | Path,
    model_id: str,
    distinct: pl.DataFrame,
    load_encoder: Callable[[], TextEncoder],
    *,
    int8_gate: Literal["refuse", "fall back"] | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Embed the texts (text_hash, text; distinct) that ml.embedding_cache lacks for the model, committing
    chunk by chunk; the model is loaded only when something is missing. With an `int8_gate`, an int8
    encoder is checked first (int8_check): short of it, refused, or its fp32 reference embeds instead. The
    steps that read a site's vectors embed with the encoder that made them, unchecked (None)."""
    todo = _uncached(warehouse, model_id, distinct)
    encoder = check = None
    load_seconds = embed_seconds = 0.0
    chunks = 0
    if todo.height:
        started = time.monotonic()
        encoder = load_encoder()
        load_seconds = time.monotonic() - started
        if encoder.model_id != model_id:
            raise ValueError(f"the loaded model is {encoder.model_id}, not {model_id}")
        check = check_int8(encoder, distinct) if int8_gate else None
        if check and not check.passed:
            if int8_gate == "refuse":
                raise refuse(check)
            encoder = encoder.reference
            model_id = encoder.model_id
            todo = _uncached(warehouse, model_id, distinct)
    for chunk in todo.iter_slices(chunk_size):
        started = time.monotonic()
        vectors = encoder.encode(chunk["text"].to_list())
        embed_seconds += time.monotonic() - started
        rows = vectors_frame(model_id, chunk["text_hash"], vectors)
        merge_rows(warehouse, "ml.embedding_cache", rows, key=["model", "text_hash"])
        chunks += 1
        if progress:
            progress(min(chunks * chunk_size, todo.height), todo.height)
    return {
        "cache_hits": distinct.height - todo.height,
        "embedded": todo.height,
        "embed_seconds": embed_seconds,
        "chunks": chunks,
        "encoder": encoder,
        "load_seconds": load_seconds,
        "model_id": model_id,
        "int8": check,
    }


def field_vectors(
    warehouse: str | Path,
    model_id: str,
    texts: dict[str, list[str | None]],
    load_encoder: Callable[[], TextEncoder],
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, np.ndarray], dict]:
    """Unit vectors of several texts per page ({field: text per page}), through the embedding cache:
    zero rows where a page has no such text. Also returns what fill_cache did."""
    from interlink_pipeline.core.urls import stable_ids

    frames = {
        name: pl.DataFrame({"text": pl.Series(values, dtype=pl.String)}).with_columns(
            pl.when(pl.col("text").str.strip_chars() != "").then(pl.col("text"))
        )
        for name, values in texts.items()
    }
    frames = {
        name: f.with_columns(stable_ids(f["text"].fill_null(""), 32).alias("text_hash"))
        for name, f in frames.items()
    }
    distinct = (
        pl.concat([f.drop_nulls("text") for f in frames.values()])
        .unique("text_hash", keep="first")
        .sort("text_hash")
    )
    filled = fill_cache(warehouse, model_id, distinct, load_encoder, progress=progress)
    wanted = pl.concat(
        [
            f.with_row_index("row").drop_nulls("text").select(pl.lit(name).alias("field"), "row", "text_hash")
            for name, f in frames.items()
        ]
    )
    # the cached vectors go straight into their pages' rows a chunk at a time: the site's distinct texts
    # are never held as one more matrix (and a frame beside it) on top of the fields'
    with connect(warehouse) as con, streaming(con):
        con.register("wanted", distinct.select("text_hash").to_arrow())
        vectors, placed = _cached_vectors(con, model_id, frames, wanted)
    if placed != wanted.height:
        missing = wanted.height - placed
        raise ValueError(f"ml.embedding_cache lacks {missing:,} of the texts it was just given")
    return vectors, filled


@contextmanager
def streaming(con):
    """`con`'s reads under CACHE_READ_MEMORY, so that DuckDB spills what it sorts or joins instead of
    holding a site's vectors in its buffers (up to memory_limit) beside the matrix they fill. The limit is
    the database's, shared by any other connection to the file in this process: put back after."""
    con.execute(f"SET memory_limit = '{CACHE_READ_MEMORY}'")
    try:
        yield con
    finally:
        con.execute(f"SET memory_limit = '{memory_limit()}'")


def _cached_vectors(
    con, model_id: str, frames: dict[str, pl.DataFrame], wanted: pl.DataFrame
) -> tuple[dict[str, np.ndarray], int]:
    """Each field's vectors read off the registered `wanted` texts' cache rows, a chunk at a time, and how
    many (field, page) texts were placed."""
    found = "FROM ml.embedding_cache c JOIN wanted w USING (text_hash) WHERE c.model = ?"
    dim = con.execute(f"SELECT max(c.dim) {found}", [model_id]).fetchone()[0] or 0
    # zeros, so a field no page has (body text on a site without it) holds no memory: its pages are
    # never written (a broadcast zero row would be as small, and 20x slower to gather from)
    vectors = {name: np.zeros((f.height, dim), dtype=np.float32) for name, f in frames.items()}
    placed = 0
    read = con.execute(f"SELECT c.text_hash, c.vector {found}", [model_id])
    for batch in read.to_arrow_reader(CACHE_READ_ROWS):
        chunk = pl.from_arrow(batch)
        block = chunk["vector"].list.to_array(dim).to_numpy()
        at = wanted.join(chunk.select("text_hash", pl.int_range(pl.len()).alias("at")), on="text_hash")
        for (name,), part in at.partition_by("field", as_dict=True).items():
            vectors[name][part["row"].to_numpy()] = block[part["at"].to_numpy()]
        placed += at.height
    return vectors, placed


class SentenceEncoder(Protocol):
    """The model that embedded the pages, as a plan asks it to embed sentences (the embedder resource)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def identity(self) -> ModelIdentity: ...


def require_model(warehouse: str | Path, site: str, model: ModelIdentity) -> None:
    """The plan embeds sentences beside the pages' vectors: both must be of one model's files, or the
    sentence test compares two spaces."""
    with connect(warehouse) as con:
        made = [
            row[0]
            for row in con.execute(
                "SELECT DISTINCT model FROM ml.page_embeddings WHERE site = ? ORDER BY model", [site]
            ).fetchall()
        ]
    other = [model_id for model_id in made if not model.same_files(model_id)]
    if other:
        raise InputError(
            f"ml.page_embeddings for {site} were made by {other[0]}, not by the configured model "
            f"{model.model_id}: materialise page_embeddings again (or configure that model) before planning."
        )


def read_vectors(
    warehouse: str | Path,
    site: str,
    columns: tuple[str, ...] = ("page_id", "path", "text"),
    chunk_rows: int = 50_000,
) -> tuple[pl.DataFrame, np.ndarray]:
    """A site's pages (`columns` of staging.pages, by page_id) and their vectors as one float32 matrix.

    Streams the vectors into a preallocated array, so memory is the matrix plus one chunk.
    """
    select = ", ".join(f'p."{c}"' for c in columns)
    with connect(warehouse) as con:
        pages, embedded, dim = con.execute(
            "SELECT (SELECT count(*) FROM staging.pages WHERE site = ?), count(*), max(dim) "
            "FROM ml.page_embeddings WHERE site = ?",
            [site, site],
        ).fetchone()
        matched = con.execute(
            "SELECT count(*) FROM ml.page_embeddings e JOIN staging.pages p USING (site, page_id) "
            "WHERE e.site = ?",
            [site],
        ).fetchone()[0]
        if not embedded:
            raise InputError(f"ml.page_embeddings has no rows for {site}: materialise page_embeddings first.")
        if not pages == embedded == matched:
            raise InputError(
                f"ml.page_embeddings for {site} is stale ({embedded} vectors, {pages} pages, {matched} "
                "matching): materialise page_embeddings again after pages."
            )
        found = con.execute(
            f"SELECT {select}, p.page_id AS page_row_key FROM staging.pages p "
            "WHERE p.site = ? ORDER BY p.page_id",
            [site],
        ).pl()
        rows = found.select(pl.col("page_row_key").alias("page_id"), pl.int_range(pl.len()).alias("row"))
        vectors = np.empty((embedded, dim), dtype=np.float32)
        # unsorted and unjoined, so DuckDB streams them: sorting them with the pages held the site's vectors
        # in its buffers (0.5 GB more at 100,000 pages) beside the matrix they fill
        with streaming(con):
            reader = con.execute(
                "SELECT page_id, vector FROM ml.page_embeddings WHERE site = ?", [site]
            ).to_arrow_reader(chunk_rows)
            for batch in reader:
                chunk = pl.from_arrow(batch)
                at = chunk.select("page_id", pl.int_range(pl.len()).alias("at")).join(rows, on="page_id")
                block = chunk["vector"].list.to_array(dim).to_numpy()
                vectors[at["row"].to_numpy()] = block[at["at"].to_numpy()]
    return found.drop("page_row_key"), vectors
