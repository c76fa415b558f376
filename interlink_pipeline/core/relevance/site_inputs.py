"""What the relevance steps read of a site: its pages in row order, their text fields and the signals on
them (clusters, SERP matches, the kept neighbour index), and its existing links."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.ingest.link_graph import LINK_COLUMNS, LinkGraph, page_links
from interlink_pipeline.core.ml.encoders import TextEncoder
from interlink_pipeline.core.ml.page_embeddings import field_vectors
from interlink_pipeline.core.relevance.site_signals import SiteSignals
from interlink_pipeline.core.relevance.text_neighbours import NeighbourStore
from interlink_pipeline.core.warehouse.site_tables import SiteTables, standing_decisions

PAGE_COLUMNS = [
    "page_id",
    "url",
    "url_key",
    "path",
    "title",
    "h1",
    "meta_description",
    "body_text",
    "duplicate_key",
    "is_home",
    "crawl_id",
]
# the stored text column each text field reads
FIELD_COLUMNS = {"title": "title", "h1": "h1", "meta_description": "meta_description", "body": "body_text"}
# what relevance_inputs reads: the ranker, the candidates and the backtest depend on these tables
RELEVANCE_TABLES = (
    "staging.pages",
    "ml.page_embeddings",
    "ml.page_clusters",
    "serp.results",
    "raw.crawl_links",
    "graph.link_decisions",
)


@dataclass
class RelevanceInputs:
    pages: pl.DataFrame  # PAGE_COLUMNS, by page_id: row i is page i everywhere
    signals: SiteSignals
    links: LinkGraph
    embedded: int  # texts the model embedded (the rest came from the cache)
    decided: pl.DataFrame  # the editors' standing decisions: source, target (rows), decision


def relevance_inputs(
    tables: SiteTables, site: str, model_id: str, encoder: Callable[[], TextEncoder] | None = None
) -> RelevanceInputs:
    """Everything the candidates are built from: pages, text fields, SERP, clusters, links, and the text
    vectors when an `encoder` is given (else with_vectors adds them when they turn out to be needed)."""
    site_pages = tables.read_site_required("staging.pages", site, "pages", PAGE_COLUMNS).sort("page_id")
    index = site_pages.select("page_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    texts = {name: site_pages[column].to_list() for name, column in FIELD_COLUMNS.items()}
    clusters = tables.read_site("ml.page_clusters", site, ["page_id", "cluster_id"]).join(index, on="page_id")
    cluster = np.full(site_pages.height, -1, dtype=np.int64)
    cluster[clusters["row"].to_numpy()] = clusters["cluster_id"].to_numpy()
    serp = (
        tables.read_site("serp.results", site, ["page_id", "matched_page_id", "rank"])
        .drop_nulls("matched_page_id")
        .join(index.rename({"row": "source"}), on="page_id")
        .join(index.rename({"page_id": "matched_page_id", "row": "target"}), on="matched_page_id")
        .select("source", "target", pl.col("rank").cast(pl.Int64))
    )
    store = NeighbourStore(
        tables.kept_state(site) / "neighbours", site_pages["page_id"].cast(pl.String).to_list(), model_id
    )
    signals = SiteSignals(
        site_pages["path"].to_list(),
        texts,
        {},
        cluster,
        serp,
        site_pages["duplicate_key"].to_list(),
        store,
    )
    links = page_links(tables.read_site("raw.crawl_links", site, LINK_COLUMNS), site_pages["url_key"])
    decided = (
        standing_decisions(tables.read_site("graph.link_decisions", site))
        .join(index.rename({"page_id": "source_page_id", "row": "source"}), on="source_page_id")
        .join(index.rename({"page_id": "target_page_id", "row": "target"}), on="target_page_id")
        .select("source", "target", "decision")
        .sort("source", "target")
    )
    inputs = RelevanceInputs(site_pages, signals, links, 0, decided)
    return inputs if encoder is None else with_vectors(inputs, tables, model_id, encoder)


def with_vectors(
    inputs: RelevanceInputs, tables: SiteTables, model_id: str, encoder: Callable[[], TextEncoder]
) -> RelevanceInputs:
    """The inputs with each text field's vectors, through the embedding cache (what it lacks, `encoder()`
    embeds: the model is loaded only then)."""
    vectors, filled = field_vectors(tables.path, model_id, inputs.signals.texts, encoder)
    return dataclasses.replace(
        inputs, signals=dataclasses.replace(inputs.signals, vectors=vectors), embedded=filled["embedded"]
    )
