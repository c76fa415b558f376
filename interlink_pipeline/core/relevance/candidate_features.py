"""The features a candidate pair has on its own: text cosines, URL relations, link-graph counts, phrase
match and SERP place (CandidateBuilder.source_features adds those taken over a source's candidates)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.relevance.site_signals import SiteSignals
from interlink_pipeline.core.relevance.url_tree import CHUNK_ROWS, UrlTree

PAIRS_PER_SPARSE_STEP = 262_144  # pairs whose sparse rows are gathered at a time (bounded memory)

# the features every candidate carries, in the ranker's order
FEATURES = (
    "cos_title",
    "cos_h1",
    "cos_meta_description",
    "cos_body",
    "cos_body_title",
    "rank_title",
    "rank_body",
    "is_parent",
    "is_child",
    "is_sibling",
    "same_section",
    "tree_distance",
    "template_twin",
    "source_depth",
    "target_depth",
    "two_hop",
    "cocitation",
    "coupling",
    "adamic_adar",
    "reverse_link",
    "navigation_link",
    "target_inlinks",
    "source_outlinks",
    "mention_commonness",
    "mention_words",
    "mention_title",
    "serp_score",
    "same_cluster",
    "listing_similarity",
    "menu_parent",
)
# the features read off the site's existing links: a site without a links export is ranked by default
# weights fitted with them blank (link_ranker.DEFAULT_WEIGHTS' "without_links")
LINK_FEATURES = ("two_hop", "cocitation", "coupling", "adamic_adar", "reverse_link", "navigation_link",
                 "target_inlinks", "source_outlinks", "listing_similarity", "menu_parent")  # fmt: skip


@dataclass(frozen=True)
class Proposals:
    """One link set's proposed pairs and the link-dependent signals their features read."""

    pairs: pl.DataFrame  # source, target, origins
    links: LinkGraph
    content: sparse.csr_matrix
    undirected: sparse.csr_matrix  # the in-content link graph both ways (link_signals.adamic_adar_weights)
    neighbour_weight: np.ndarray  # each page's Adamic–Adar weight as a common neighbour
    mentions: pl.DataFrame

    @cached_property
    def incoming(self) -> sparse.csr_matrix:
        """Row t: the pages linking to t in their content."""
        return sparse.csr_matrix(self.content.T)

    @cached_property
    def navigation(self) -> sparse.csr_matrix:
        """The navigation links (header, footer, menus), which a backtest never hides."""
        return self.links.adjacency(self.content.shape[0], content=False)

    @cached_property
    def weighted_links(self) -> sparse.csr_matrix:
        """The undirected links, each weighted by its far end's Adamic–Adar weight: a row of it dotted
        with another page's undirected row is the pair's Adamic–Adar score."""
        return sparse.csr_matrix(self.undirected @ sparse.diags(self.neighbour_weight))


def _lookup(matrix: sparse.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    if not len(rows):
        return np.empty(0, dtype=np.float32)
    return np.asarray(matrix[rows, cols]).ravel().astype(np.float32)


def _row_dots(
    left: sparse.csr_matrix, right: sparse.csr_matrix, rows: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """Per pair, the dot product of `left`'s row and `right`'s col-th row: the pair's entry of
    left @ right.T, without the product (on a site whose pages share popular link targets it has billions
    of entries). Counts of shared links, exact."""
    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), PAIRS_PER_SPARSE_STEP):
        part = slice(start, start + PAIRS_PER_SPARSE_STEP)
        out[part] = np.asarray(left[rows[part]].multiply(right[cols[part]]).sum(axis=1)).ravel()
    return out


def _rowwise_cos(vectors: np.ndarray | None, rows: np.ndarray, cols: np.ndarray, other=None) -> np.ndarray:
    """Row-wise dot products, gathered a chunk at a time into reused buffers: gathering millions of pairs'
    vectors into fresh arrays costs more in page faults than the products themselves."""
    if vectors is None:
        return np.zeros(len(rows), dtype=np.float32)
    right = vectors if other is None else other
    out = np.empty(len(rows), dtype=np.float32)
    left_part = np.empty((min(CHUNK_ROWS, len(rows)), vectors.shape[1]), dtype=vectors.dtype)
    right_part = np.empty((len(left_part), right.shape[1]), dtype=right.dtype)
    for start in range(0, len(rows), CHUNK_ROWS):
        n = min(CHUNK_ROWS, len(rows) - start)
        np.take(vectors, rows[start : start + n], axis=0, out=left_part[:n])
        np.take(right, cols[start : start + n], axis=0, out=right_part[:n])
        out[start : start + n] = np.einsum("ij,ij->i", left_part[:n], right_part[:n])
    return out


def of_sources(frame: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """The rows of `frame` (by source and target) from the sources of `pairs`: what a chunk of source
    pages joins, rather than hashing the whole site's rows for every chunk."""
    return frame.filter(pl.col("source").is_in(pairs["source"].unique().implode()))


def serp_scores(serp: pl.DataFrame, depth: int) -> pl.DataFrame:
    """source, target, serp_score: 1 for the target first in the source's SERP, 1/depth for last."""
    best_rank = pl.col("rank").min()
    return serp.group_by("source", "target").agg(
        ((depth - best_rank + 1) / depth).cast(pl.Float32).alias("serp_score")
    )


def own_features(
    pairs: pl.DataFrame,
    signals: SiteSignals,
    proposals: Proposals,
    hierarchy: UrlTree,
    serp: pl.DataFrame,
) -> pl.DataFrame:
    """The FEATURES that each pair has on its own (CandidateBuilder.source_features adds the others);
    `serp` holds serp_scores."""
    s = pairs["source"].to_numpy()
    t = pairs["target"].to_numpy()
    v = signals.vectors
    links, content, incoming, navigation = (
        proposals.links,
        proposals.content,
        proposals.incoming,
        proposals.navigation,
    )
    inlinks = np.asarray(content.sum(axis=0)).ravel()
    outlinks = np.asarray(content.sum(axis=1)).ravel()
    columns: dict[str, np.ndarray] = {
        "cos_title": _rowwise_cos(v.get("title"), s, t),
        "cos_h1": _rowwise_cos(v.get("h1"), s, t),
        "cos_meta_description": _rowwise_cos(v.get("meta_description"), s, t),
        "cos_body": _rowwise_cos(v.get("body"), s, t),
        "cos_body_title": _rowwise_cos(v.get("body"), s, t, v.get("title")),
        **hierarchy.relations(s, t),
        "two_hop": _row_dots(content, incoming, s, t),
        "cocitation": _row_dots(incoming, incoming, s, t),
        "coupling": _row_dots(content, content, s, t),
        "adamic_adar": _row_dots(proposals.weighted_links, proposals.undirected, s, t),
        "reverse_link": _lookup(content, t, s),
        "navigation_link": np.maximum(_lookup(navigation, s, t), _lookup(navigation, t, s)),
        "target_inlinks": np.log1p(inlinks[t]).astype(np.float32),
        "source_outlinks": np.log1p(outlinks[s]).astype(np.float32),
        "same_cluster": ((signals.cluster[s] == signals.cluster[t]) & (signals.cluster[s] >= 0)).astype(
            np.float32
        ),
        "menu_parent": np.isin(
            s * signals.n + t, links.sections.parent * signals.n + links.sections.child
        ).astype(np.float32),
    }
    pair = ["source", "target"]
    return (
        pairs.with_columns(pl.Series(name, values, dtype=pl.Float32) for name, values in columns.items())
        .join(of_sources(proposals.mentions, pairs), on=pair, how="left", maintain_order="left")
        .join(of_sources(serp, pairs), on=pair, how="left", maintain_order="left")
        .with_columns(
            pl.col("mention_commonness", "mention_words", "mention_title", "serp_score").fill_null(0.0)
        )
    )
