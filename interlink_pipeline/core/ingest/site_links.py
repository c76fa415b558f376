"""The site's existing links as the plan sees them: node edges over the kept pages and the pass-through URLs
after them, the same with a backtest's hidden pairs taken out, and the anchors the site already uses."""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.core.ingest.link_graph import LinkGraph, followed_hyperlinks


def existing_links(links: pl.DataFrame, url_keys: pl.Series) -> tuple[pl.DataFrame, int]:
    """Followed hyperlinks as (source, target, content) node edges, and the number of nodes.

    Kept pages (`url_keys`, in order) are nodes 0..n-1; any other URL the links mention gets a node after
    them. `content` is false for links in headers, footers, navigation and sidebars.
    """
    from interlink_pipeline.core.urls import url_parts

    n = len(url_keys)
    empty = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "content": pl.Boolean})
    if links.is_empty():
        return empty, n
    hyperlinks = followed_hyperlinks(links)
    keyed = pl.DataFrame(
        {
            "source_key": url_parts(hyperlinks["source_url"])["url_key"],
            "target_key": url_parts(hyperlinks["target_url"])["url_key"],
            "content": hyperlinks["content"],
        }
    ).drop_nulls(["source_key", "target_key"])
    known = pl.DataFrame({"key": url_keys, "i": np.arange(n, dtype=np.int64)})
    others = (
        pl.concat([keyed["source_key"], keyed["target_key"]])
        .unique(maintain_order=True)
        .alias("key")
        .to_frame()
        .join(known, on="key", how="anti")
    )
    index = pl.concat(
        [known, others.with_columns(pl.int_range(n, n + others.height, dtype=pl.Int64).alias("i"))]
    )
    edges = keyed.join(index.rename({"key": "source_key", "i": "source"}), on="source_key").join(
        index.rename({"key": "target_key", "i": "target"}), on="target_key"
    )
    # a link present both in the content and in navigation counts as content
    edges = (
        edges.filter(pl.col("source") != pl.col("target"))
        .group_by("source", "target")
        .agg(pl.col("content").any())
        .sort("source", "target")
    )
    return edges, n + others.height


def content_page_pairs(existing: pl.DataFrame, page_ids: pl.Series) -> pl.DataFrame:
    """The in-content links between pages (existing_links' edges; pass-through nodes left out) as
    source_page_id, target_page_id."""
    n = page_ids.len()
    between = existing.filter(pl.col("content") & (pl.col("source") < n) & (pl.col("target") < n))
    return pl.DataFrame(
        {
            "source_page_id": page_ids.gather(between["source"]),
            "target_page_id": page_ids.gather(between["target"]),
        }
    )


def without_hidden(existing: pl.DataFrame, hidden: pl.DataFrame, navigation: pl.DataFrame) -> pl.DataFrame:
    """Existing node edges with the `hidden` in-content pairs taken out: an edge that also exists in
    navigation (`navigation` pairs) stays, as a navigation link."""
    flagged = existing.join(
        hidden.select("source", "target").with_columns(pl.lit(True).alias("hidden")),
        on=["source", "target"],
        how="left",
    ).join(
        navigation.select("source", "target").unique().with_columns(pl.lit(True).alias("navigation")),
        on=["source", "target"],
        how="left",
    )
    hidden_edge = pl.col("hidden").fill_null(False)
    return (
        flagged.filter(~hidden_edge | pl.col("navigation").fill_null(False))
        .with_columns(pl.when(hidden_edge).then(False).otherwise(pl.col("content")).alias("content"))
        .select(existing.columns)
    )


def taken_anchors(links: LinkGraph) -> dict[str, set[int]]:
    """The site's in-content anchor texts (lower case) and the pages each points at: a plan's anchor
    counts them against anchor_max_targets."""
    taken: dict[str, set[int]] = {}
    for target, anchor in zip(links.target[links.content], links.anchor[links.content], strict=True):
        if anchor:
            taken.setdefault(anchor.strip().lower(), set()).add(int(target))
    return taken


def links_from_crawl_counts(
    depth: pl.Series, inlinks: pl.Series, home: int
) -> tuple[pl.DataFrame, int, np.ndarray | None]:
    """The existing links as far as a crawl export without All Inlinks knows them, as node edges, the number
    of nodes and each page's in-links as the crawl counted them (None when it has neither column).

    A page the crawler reached `d` clicks from home is entered from a chain of pass-through nodes (home →
    1 → … → d-1), so its click depth is the crawl's; a page with no in-links in the crawl (found through a
    sitemap or a URL list) gets none and is an orphan. The edges are navigation (content false): where the
    links sit on their pages is unknown."""
    n = len(depth)
    empty = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "content": pl.Boolean})
    if depth.null_count() == n and inlinks.null_count() == n:
        return empty, n, None
    counted = inlinks.to_numpy().astype(np.float64)
    clicks = depth.to_numpy().astype(np.float64)
    reached = np.where(np.isnan(counted), ~np.isnan(clicks), counted > 0)
    reached[home] = False
    deepest = int(np.nanmax(clicks)) if (~np.isnan(clicks)).any() else 1
    # a reached page of unknown depth sits at the deepest known level; the start URL's level 0 is home's
    clicks = np.clip(np.nan_to_num(clicks, nan=deepest), 1, None).astype(np.int64)
    ladder = n + np.arange(max(0, deepest - 1), dtype=np.int64)  # the pass-through node of level 1, 2, …
    level_node = np.concatenate([[home], ladder])  # the node at level d - 1 enters a page at level d
    sources = np.concatenate([level_node[:-1], level_node[clicks[reached] - 1]])
    targets = np.concatenate([ladder, np.flatnonzero(reached)])
    edges = pl.DataFrame(
        {"source": sources, "target": targets, "content": np.zeros(len(sources), dtype=bool)},
        schema=empty.schema,
    )
    in_crawl = np.where(np.isnan(counted), reached.astype(np.float64), counted).astype(np.int64)
    return edges, n + len(ladder), in_crawl
