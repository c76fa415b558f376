"""A site's existing followed links between its kept pages, read from the links export: the graph every
link-dependent signal reads, and the one a backtest hides links from."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.ingest.site_sections import SiteSections, site_sections


@dataclass(frozen=True)
class LinkGraph:
    """A site's existing followed links between kept pages (page rows), one row per link instance."""

    source: np.ndarray
    target: np.ndarray
    content: np.ndarray  # bool: in the body (not header, footer, navigation or sidebar)
    anchor: np.ndarray  # object array of anchor texts (None when unknown)
    # from navigation links, which a backtest never hides
    sections: SiteSections = dataclasses.field(default_factory=SiteSections.empty)

    @classmethod
    def empty(cls) -> LinkGraph:
        none = np.empty(0, dtype=np.int64)
        return cls(none, none, np.empty(0, dtype=bool), np.empty(0, dtype=object))

    @classmethod
    def from_frame(cls, frame: pl.DataFrame) -> LinkGraph:
        """From a frame with source, target (page rows), content and anchor."""
        return cls(
            frame["source"].to_numpy().astype(np.int64),
            frame["target"].to_numpy().astype(np.int64),
            frame["content"].to_numpy().astype(bool),
            np.asarray(frame["anchor"].to_list(), dtype=object),
        )

    def subset(self, keep: np.ndarray) -> LinkGraph:
        return replace(
            self, source=self.source[keep], target=self.target[keep], content=self.content[keep],
            anchor=self.anchor[keep],
        )  # fmt: skip

    def content_pairs(self) -> pl.DataFrame:
        """Distinct (source, target) pairs linked in the body."""
        return (
            pl.DataFrame({"source": self.source[self.content], "target": self.target[self.content]})
            .unique()
            .sort("source", "target")
        )

    def adjacency(self, n: int, content: bool) -> sparse.csr_matrix:
        keep = self.content if content else ~self.content
        matrix = sparse.csr_matrix(
            (np.ones(int(keep.sum()), dtype=np.float32), (self.source[keep], self.target[keep])), shape=(n, n)
        )
        matrix.data[:] = 1.0  # duplicates summed: one link is one
        matrix.setdiag(0)
        matrix.eliminate_zeros()
        return matrix


NAVIGATION_POSITIONS = ("header", "footer", "navigation", "nav", "sidebar", "aside", "head")


# the columns of raw.crawl_links a link graph reads (a step reads no others: a third of a 100,000-page
# site's link rows' memory is in the rest)
LINK_COLUMNS = ["source_url", "target_url", "anchor", "link_type", "follow", "link_position", "link_path"]


def followed_hyperlinks(links: pl.DataFrame) -> pl.DataFrame:
    """The rows of a raw.crawl_links frame that are followed hyperlinks, with `content` (in the body). A link
    whose position is not given is not taken for an editor's in-content link (a menu link would be)."""
    position = pl.col("link_position").str.strip_chars().str.to_lowercase()
    return links.filter(
        (pl.col("link_type").is_null() | (pl.col("link_type").str.to_lowercase() == "hyperlink"))
        & pl.col("follow")
    ).with_columns(
        ((position.fill_null("") != "") & ~position.is_in(NAVIGATION_POSITIONS).fill_null(False)).alias(
            "content"
        )
    )


def page_links(links: pl.DataFrame, url_keys: pl.Series) -> LinkGraph:
    """The followed hyperlinks of a raw.crawl_links frame between the kept pages (`url_keys`, in page-row
    order), one row per link, with anchors, and the sections the site declares.

    A paginated series is one list: the links on its page 2+ count as links of its first page when that
    page is kept (a blog index lists every post, not only the newest)."""
    from interlink_pipeline.core.urls import url_parts

    if links.is_empty():
        return LinkGraph.empty()
    followed = followed_hyperlinks(links)
    rows = pl.DataFrame({"key": url_keys, "row": np.arange(len(url_keys), dtype=np.int64)})
    if "link_path" not in followed.columns:
        followed = followed.with_columns(pl.lit(None, dtype=pl.String).alias("link_path"))
    source = url_parts(followed["source_url"]).select(
        pl.col("url_key").alias("source_url_key"),
        pl.when(pl.col("url_key").is_in(url_keys.implode()))
        .then("url_key")
        .otherwise("series_key")
        .alias("source_key"),
    )
    keyed = pl.DataFrame(
        {
            "source_url_key": source["source_url_key"],
            "source_key": source["source_key"],
            "target_key": url_parts(followed["target_url"])["url_key"],
            "content": followed["content"],
            "anchor": followed["anchor"],
            "link_path": followed["link_path"],
        }
    )
    edges = (
        keyed.join(rows.rename({"key": "source_key", "row": "source"}), on="source_key")
        .join(rows.rename({"key": "target_key", "row": "target"}), on="target_key")
        .filter(pl.col("source") != pl.col("target"))
    )
    sections = site_sections(keyed, dict(zip(url_keys.to_list(), range(len(url_keys)), strict=True)))
    return replace(LinkGraph.from_frame(edges), sections=sections)
