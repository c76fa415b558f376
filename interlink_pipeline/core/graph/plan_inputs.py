"""What a site's plan is built on, besides its candidates: its pages in page-id order, their vectors,
clusters and similar pairs, the existing links as node edges, and the site's language with the anchor and
mention rules told from it — read once per plan, shared by the plan and the backtest's plans."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.anchors import AnchorRules, site_anchor_rules
from interlink_pipeline.core.graph.mention_sense import MentionSense
from interlink_pipeline.core.graph.same_name import name_groups
from interlink_pipeline.core.ingest.link_graph import LINK_COLUMNS, page_links
from interlink_pipeline.core.ingest.site_links import existing_links, links_from_crawl_counts, taken_anchors
from interlink_pipeline.core.ingest.site_sections import SiteSections
from interlink_pipeline.core.ml.page_embeddings import SentenceEncoder, read_vectors, require_model
from interlink_pipeline.core.relevance.url_tree import UrlTree
from interlink_pipeline.core.text import detect_language, function_words
from interlink_pipeline.core.warehouse.site_tables import SiteTables

# what the plan reads of staging.pages
PAGE_COLUMNS = ("page_id", "url", "url_key", "path", "title", "h1", "meta_description", "body_text",
                "is_home", "crawl_id", "text_hash", "crawl_depth", "crawl_inlinks")  # fmt: skip


@dataclass
class PlanInputs:
    """What a plan is built on, besides its candidates: pages in page-id order (row = node), their
    vectors and clusters, similar pairs both ways, and the existing links as node edges."""

    pages: pl.DataFrame
    vectors: np.ndarray
    index: pl.DataFrame  # page_id -> i
    cluster_of: np.ndarray
    similar: pl.DataFrame
    existing: pl.DataFrame
    nodes: int
    taken: dict[str, set[int]]  # existing in-content anchor (lower case) -> the pages it points at
    encode: Callable[[Sequence[str]], np.ndarray]  # the encoder the vectors were made with
    sections: SiteSections = field(default_factory=SiteSections.empty)
    # each page's in-links as the crawl counted them, when the links are known by these counts only (no
    # All Inlinks export: `existing` then holds the crawl's click depths, see links_from_crawl_counts)
    counted_inlinks: np.ndarray | None = None
    search_console: pl.DataFrame | None = None  # raw.search_console rows (url, impressions, position)

    @cached_property
    def tree(self) -> UrlTree:
        """The pages' URL tree: each page's parent and its section's size."""
        return UrlTree(self.pages["path"].to_list())

    @cached_property
    def name_groups(self) -> np.ndarray:
        """Per page, an id of its name when another page bears it too (same_name.name_groups), else -1."""
        return name_groups(self.pages)

    @cached_property
    def language(self) -> str:
        """The site's language, told from its titles."""
        return detect_language(self.pages["title"].drop_nulls().head(2000).to_list())

    @cached_property
    def sense(self) -> MentionSense:
        """Whether a phrase of a page's text means the page it would link to (mention_sense.py)."""
        return MentionSense.of(self.pages, self.vectors, self.encode, function_words(self.language))

    @cached_property
    def anchor_rules(self) -> AnchorRules:
        """Which phrases may anchor a link on this site (anchors.py)."""
        return site_anchor_rules(self.pages, self.taken, self.language)

    @property
    def parents(self) -> list[int]:
        return self.tree.parent.tolist()

    @property
    def links_known(self) -> str:
        """How the site's existing links are known: 'links' (All Inlinks), 'counts' (the crawl's in-link
        counts and depths) or 'none'."""
        if self.counted_inlinks is not None:
            return "counts"
        return "links" if not self.existing.is_empty() else "none"


def indexed(frame: pl.DataFrame, index: pl.DataFrame, columns: dict[str, str]) -> pl.DataFrame:
    """Replace page-id columns by page indices, in place (rows of pages not in the index are dropped)."""
    order = [columns.get(c, c) for c in frame.columns]
    for column, name in columns.items():
        frame = frame.join(index.rename({"page_id": column, "i": name}), on=column).drop(column)
    return frame.select(order)


def plan_inputs_from(
    pages: pl.DataFrame,
    vectors: np.ndarray,
    clusters: pl.DataFrame,
    similarity_pairs: pl.DataFrame,
    links: pl.DataFrame,
    encode: Callable[[Sequence[str]], np.ndarray],
) -> PlanInputs:
    """A site's plan inputs from its pages (in page-id order) and vectors, ml.page_clusters,
    ml.similarity_pairs and raw.crawl_links, and the encoder that made the vectors."""
    index = pages.select("page_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("i"))
    cluster = indexed(clusters, index, {"page_id": "i"}).sort("i")
    cluster_of = np.full(len(pages), -1, dtype=np.int64)
    cluster_of[cluster["i"].to_numpy()] = cluster["cluster_id"].to_numpy()
    similar = indexed(
        similarity_pairs.filter(pl.col("relation") == "similar").select(
            "source_page_id", "target_page_id", "score"
        ),
        index,
        {"source_page_id": "a", "target_page_id": "b"},
    )
    similar = pl.concat([similar, similar.select(pl.col("b").alias("a"), pl.col("a").alias("b"), "score")])
    existing, nodes = existing_links(links, pages["url_key"])
    counted = None
    if links.is_empty():
        home = int(np.flatnonzero(pages["is_home"].to_numpy())[0])
        existing, nodes, counted = links_from_crawl_counts(pages["crawl_depth"], pages["crawl_inlinks"], home)
    anchors = page_links(links, pages["url_key"])
    return PlanInputs(
        pages,
        vectors,
        index,
        cluster_of,
        similar,
        existing,
        nodes,
        taken_anchors(anchors),
        encode,
        anchors.sections,
        counted,
    )


def read_plan_inputs(tables: SiteTables, site: str, encoder: SentenceEncoder) -> PlanInputs:
    """A site's plan inputs, read off the warehouse; `encoder`: the model ml.page_embeddings was made with,
    which embeds the plan's sentences (page vectors of another model are refused: two spaces)."""
    require_model(tables.path, site, encoder.identity())
    pages, vectors = read_vectors(tables.path, site, PAGE_COLUMNS)
    inputs = plan_inputs_from(
        pages,
        vectors,
        tables.read_site("ml.page_clusters", site, ["page_id", "cluster_id"]),
        tables.read_site("ml.similarity_pairs", site),
        tables.read_site("raw.crawl_links", site, LINK_COLUMNS),
        encoder.encode,
    )
    inputs.search_console = tables.read_site("raw.search_console", site, ["url", "impressions", "position"])
    return inputs
