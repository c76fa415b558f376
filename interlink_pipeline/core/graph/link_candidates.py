"""Link candidates: every (source, target) pair some signal of the site proposes, with every signal's score.

Signals: the nearest pages by each text field's embedding (title, H1, meta description, body text); the URL
hierarchy (parent, children, siblings); the existing link graph (two-hop paths, co-citation, coupling,
Adamic–Adar); the target's phrases (its title, H1 and the anchors other pages use for it) found in the
source's text; SERP results; topic clusters; listings (sources whose links go to pages like the target); the
site's menus (site_sections). Whichever signal proposed a pair, the pair gets every
signal's score as a feature, so the ranker learns how much each one is worth on this site.

Existing in-content links are never candidates (they exist), nor are near-duplicates (duplicate
content). The graph features read only the links they
are given: a backtest passes the visible links, so hidden links reach no feature.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.graph.site_sections import SiteSections, site_sections
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.ml.page_neighbours import (
    NEIGHBOUR_MARGIN,
    Increment,
    nearest_pages,
    neighbour_state,
)

TEXT_FIELDS = ("title", "h1", "meta_description", "body")
# Anchors that say nothing about the target: never phrases of it.
GENERIC_ANCHORS = frozenset(
    {"here", "click here", "read more", "more", "learn more", "this", "link", "this page", "page", "see",
     "details", "website", "home", "next", "previous", "back", "top", "continue reading"}
)  # fmt: skip
_TOKEN = re.compile(r"\w+", re.UNICODE)
CHUNK_ROWS = 4096  # pairs per vectorised step: small enough to stay in cache
PAIRS_PER_SPARSE_STEP = 262_144  # pairs whose sparse rows are gathered at a time (bounded memory)
# Parents with more pages below them than this have their pages' siblings kept in the NeighbourStore: a
# re-crawl searches only the changed pages of a large section, the rest take a fraction of a second afresh.
KEPT_SIBLINGS_ABOVE = 2000

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
ORIGINS = ("similar", "hierarchy", "graph", "mention", "serp", "listing", "menu")
# a pair's origins are gathered as bit flags (an OR per pair is far cheaper than joining strings)
_ORIGIN_BIT = {name: 1 << i for i, name in enumerate(ORIGINS)}
_ORIGIN_NAMES = {
    flags: "+".join(sorted(name for name, bit in _ORIGIN_BIT.items() if flags & bit))
    for flags in range(1, 1 << len(ORIGINS))
}


def _origin(name: str) -> pl.Expr:
    return pl.lit(_ORIGIN_BIT[name], dtype=pl.UInt8).alias("origin")


@dataclass(frozen=True)
class CandidateOptions:
    """How many pairs each signal proposes per source page; every field is a `link_candidates` setting."""

    neighbours_per_field: int = 20  # nearest pages by each text field's embedding
    children_per_page: int = 50  # pages below in the URL path (the most similar first)
    siblings_per_page: int = 20  # pages under the same parent (the most similar first)
    graph_per_page: int = 20  # best by Adamic–Adar on the existing links
    mentions_per_page: int = 30  # targets whose phrases occur in the source's text
    listings_per_page: int = 20  # sources whose in-content links go to the pages most like the target
    serp_depth: int = 10  # SERP positions that count as evidence
    max_phrase_words: int = 8


@dataclass(frozen=True)
class SiteSignals:
    """What a site offers, for its kept pages in one fixed order (rows 0..n-1 everywhere)."""

    paths: list[str]  # URL path per page
    texts: dict[str, list[str | None]]  # field -> text per page (TEXT_FIELDS; body may be all None)
    vectors: dict[str, np.ndarray]  # field -> unit vectors, zero rows where the field is empty
    cluster: np.ndarray  # topic cluster per page (-1: unknown)
    serp: pl.DataFrame  # source, target, rank: the pages a page's SERP returned
    duplicate_key: list[str | None] | None = None  # pages sharing one are near-duplicates, never candidates
    # where the text neighbours are kept between steps and runs (None: searched afresh)
    neighbour_store: NeighbourStore | None = None

    @property
    def n(self) -> int:
        return len(self.paths)


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
    ) -> Increment:
        """Update the field's kept lists (exactly: see similarity.nearest_pages) and return what it took.

        Each page's neighbours are searched among all pages with the field, or with `groups` ({group key:
        page rows}) among its own group's pages only (a page's siblings under one parent)."""
        groups = {"": _present(vectors)} if groups is None else groups
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
                vectors[rows], k + 1 + NEIGHBOUR_MARGIN, ids, hashes, self.model, kept
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


def followed_hyperlinks(links: pl.DataFrame) -> pl.DataFrame:
    """The rows of a raw.crawl_links frame that are followed hyperlinks, with `content` (in the body)."""
    return links.filter(
        (pl.col("link_type").is_null() | (pl.col("link_type").str.to_lowercase() == "hyperlink"))
        & pl.col("follow")
    ).with_columns(
        (~pl.col("link_position").str.to_lowercase().is_in(NAVIGATION_POSITIONS).fill_null(False)).alias(
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


class CandidateBuilder:
    """Builds a site's candidates for a set of links. What does not depend on the links — the text
    neighbours, the URL hierarchy, SERP — is computed once, so rebuilding for other link sets (the ranker's
    training folds, a backtest) costs only the link-dependent signals."""

    def __init__(self, signals: SiteSignals, options: CandidateOptions | None = None):
        self.signals = signals
        self.options = options or CandidateOptions()
        self.hierarchy = UrlTree(signals.paths)
        self.searches: dict[str, Increment] = {}  # per field, when kept in a NeighbourStore
        self.neighbours = {name: self._neighbours(name) for name in TEXT_FIELDS if name in signals.vectors}
        self.serp = signals.serp.filter(pl.col("rank") <= self.options.serp_depth)
        kept_parents, kept_siblings = self._kept_siblings()
        self.fixed = pl.concat(
            [
                _similar_pairs(self.neighbours).with_columns(_origin("similar")),
                pl.concat(
                    [
                        self.hierarchy.pairs(signals.vectors["title"], self.options, kept_parents),
                        kept_siblings,
                    ]
                ).with_columns(_origin("hierarchy")),
                self.serp.select("source", "target", _origin("serp")),
            ]
        ).select(pl.col("source", "target").cast(pl.Int64), "origin")

    def _neighbours(self, name: str) -> sparse.csr_matrix:
        vectors, k, store = (
            self.signals.vectors[name],
            self.options.neighbours_per_field,
            self.signals.neighbour_store,
        )
        if store is None or len(_present(vectors)) < 2:
            return _neighbour_matrix(vectors, k)
        self.searches[name] = store.search(name, vectors, self.signals.texts[name], k)
        return store.matrix(name, k)

    def _kept_siblings(self) -> tuple[set[int], pl.DataFrame]:
        """The parents with more than KEPT_SIBLINGS_ABOVE pages below them, and those pages' nearest
        siblings (source, target), searched through the NeighbourStore (a re-crawl searches only what
        changed); smaller groups are searched afresh by UrlTree.pairs."""
        store = self.signals.neighbour_store
        groups = self.hierarchy.groups(above=KEPT_SIBLINGS_ABOVE) if store is not None else {}
        if not groups:
            return set(), pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64})
        self.searches["siblings"] = store.search(
            "siblings",
            self.signals.vectors["title"],
            self.signals.texts["title"],
            self.options.siblings_per_page,
            {store.page_ids[parent]: members for parent, members in groups.items()},
        )
        return set(groups), store.pairs("siblings", self.options.siblings_per_page).select("source", "target")

    def searches_done(self) -> str:
        """Per text field, whether its neighbours were searched in full or updated, and why (metadata)."""
        return "; ".join(f"{name}: {done.mode} ({done.why})" for name, done in self.searches.items())

    def build(self, links: LinkGraph) -> pl.DataFrame:
        """Every proposed (source, target) pair without an existing in-content link, with its FEATURES
        and `origins` (the signals that proposed it, '+'-joined)."""
        return self.features(self.proposals(links))

    def proposals(self, links: LinkGraph) -> Proposals:
        """The proposed pairs and their origins, before features: cheap, so a caller can choose which
        sources' pairs are worth the features (the ranker samples its training sources this way)."""
        signals, options = self.signals, self.options
        content = links.adjacency(signals.n, content=True)
        adamic_adar = _adamic_adar(content)
        mentions = PhraseIndex(signals, links, options).find()
        proposed = [
            self.fixed,
            _graph_pairs(adamic_adar, options.graph_per_page).with_columns(_origin("graph")),
            mentions.select("source", "target", _origin("mention")),
            _listing_pairs(content, self.neighbours["title"], options.listings_per_page).with_columns(
                _origin("listing")
            ),
            links.sections.pairs().with_columns(_origin("menu")),
        ]
        pairs = (
            pl.concat([p.select(pl.col("source", "target").cast(pl.Int64), "origin") for p in proposed])
            .filter(pl.col("source") != pl.col("target"))
            .group_by("source", "target")
            .agg(pl.col("origin").bitwise_or())
            .select(
                "source",
                "target",
                pl.col("origin").replace_strict(_ORIGIN_NAMES, return_dtype=pl.String).alias("origins"),
            )
            .join(links.content_pairs(), on=["source", "target"], how="anti")
            .sort("source", "target")
        )
        if signals.duplicate_key is not None:
            keys = pl.Series(signals.duplicate_key, dtype=pl.String)
            same = keys.gather(pairs["source"]) == keys.gather(pairs["target"])
            pairs = pairs.filter(~same.fill_null(False))
        return Proposals(pairs, links, content, adamic_adar, mentions)

    def features(self, proposals: Proposals, sources: pl.Series | None = None) -> pl.DataFrame:
        """The proposals' FEATURES, for the given sources' pairs only when `sources` is set (a pair's
        features depend on its source's other pairs, never on other sources')."""
        pairs = proposals.pairs
        if sources is not None:
            pairs = pairs.filter(pl.col("source").is_in(sources.implode()))
        return self.source_features(proposals, self.pair_features(proposals, pairs))

    def pair_features(self, proposals: Proposals, pairs: pl.DataFrame) -> pl.DataFrame:
        """`pairs` (some of the proposals) with the FEATURES a pair has on its own; source_features adds
        the others once every candidate of their sources is there."""
        return _pair_features(pairs, self.signals, proposals, self.hierarchy, self.serp, self.options)

    def source_features(self, proposals: Proposals, pairs: pl.DataFrame) -> pl.DataFrame:
        """Every candidate of some sources, in (source, target) order, with the FEATURES computed over
        each source's candidates together: the target's rank among them by title and by body cosine (1 =
        the closest; ties share a rank, so a field a site lacks says nothing), and the listing
        similarity (one matrix product per source: the same whatever else is computed)."""
        s, t = pairs["source"].to_numpy(), pairs["target"].to_numpy()
        listing = _listing_similarity(proposals.content, self.signals.vectors["title"], s, t)
        return pairs.with_columns(
            *(
                pl.col(f"cos_{field}")
                .rank("min", descending=True)
                .over("source")
                .cast(pl.Float32)
                .alias(f"rank_{field}")
                for field in ("title", "body")
            ),
            pl.Series("listing_similarity", listing, dtype=pl.Float32),
        ).select("source", "target", "origins", *FEATURES, "mention_offset")


@dataclass(frozen=True)
class Proposals:
    """One link set's proposed pairs and the link-dependent signals their features read."""

    pairs: pl.DataFrame  # source, target, origins
    links: LinkGraph
    content: sparse.csr_matrix
    adamic_adar: sparse.csr_matrix
    mentions: pl.DataFrame


def build_candidates(
    signals: SiteSignals, links: LinkGraph, options: CandidateOptions | None = None
) -> pl.DataFrame:
    """The candidates of one link set (see CandidateBuilder.build)."""
    return CandidateBuilder(signals, options).build(links)


def _similar_pairs(neighbours: dict[str, sparse.csr_matrix]) -> pl.DataFrame:
    """Every page's nearest pages by each text field."""
    frames = []
    for matrix in neighbours.values():
        coo = matrix.tocoo()
        frames.append(pl.DataFrame({"source": coo.row.astype(np.int64), "target": coo.col.astype(np.int64)}))
    return pl.concat(frames) if frames else pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64})


class UrlTree:
    """The URL hierarchy of the kept pages: each page's parent is its nearest ancestor path among them."""

    def __init__(self, paths: list[str]):
        self.n = len(paths)
        segments = [[s for s in (p or "/").split("?")[0].split("/") if s] for p in paths]
        self.depth = np.array([len(s) for s in segments], dtype=np.int64)
        by_path = {"/".join(s): i for i, s in reversed(list(enumerate(segments)))}
        self.section = np.array([by_path.get(s[0], -1) if s else -1 for s in segments], dtype=np.int64)
        # prefix[i, d]: an id of page i's first d+1 path segments (-1 past its depth), so two pages' common
        # prefix length is a vector comparison; a section is a first segment
        self.prefix = _prefix_ids(segments, int(self.depth.max(initial=0)))
        parent = np.full(self.n, -1, dtype=np.int64)
        for i, s in enumerate(segments):
            for up in range(len(s) - 1, -1, -1):
                found = by_path.get("/".join(s[:up]))
                if found is not None and found != i:
                    parent[i] = found
                    break
        self.parent = parent

    def groups(self, above: int = 0) -> dict[int, np.ndarray]:
        """{parent: the pages right below it} for the parents with more than `above` such pages."""
        has_parent = np.flatnonzero(self.parent >= 0)
        groups = (
            pl.DataFrame({"page": has_parent, "parent": self.parent[has_parent]})
            .group_by("parent", maintain_order=True)
            .agg("page")
            .filter(pl.col("page").list.len() > above)
        )
        return {parent: np.asarray(pages, dtype=np.int64) for parent, pages in groups.iter_rows()}

    def pairs(
        self, vectors: np.ndarray, options: CandidateOptions, siblings_found: set[int] = frozenset()
    ) -> pl.DataFrame:
        """Parent, the most similar children, the most similar siblings of every page (but of the pages
        below the `siblings_found` parents, whose siblings are searched elsewhere)."""
        has_parent = np.flatnonzero(self.parent >= 0)
        frames = [
            pl.DataFrame({"source": has_parent, "target": self.parent[has_parent]}),
        ]
        for parent, members in self.groups().items():
            frames.append(self._nearest(parent, members, vectors, options.children_per_page, parent_row=True))
            if len(members) > 1 and parent not in siblings_found:
                idx, _ = exact_top(
                    vectors[members], vectors[members], min(options.siblings_per_page + 1, len(members)),
                    query_ids=np.arange(len(members)),
                )  # fmt: skip
                frames.append(
                    pl.DataFrame({"source": np.repeat(members, idx.shape[1]), "target": members[idx.ravel()]})
                )
        return pl.concat(frames)

    @staticmethod
    def _nearest(
        parent: int, members: np.ndarray, vectors: np.ndarray, k: int, parent_row: bool
    ) -> pl.DataFrame:
        if len(members) > k:
            scores = vectors[members] @ vectors[parent]
            members = members[np.argsort(-scores, kind="stable")[:k]]
        return pl.DataFrame({"source": np.full(len(members), parent, dtype=np.int64), "target": members})

    def relations(self, source: np.ndarray, target: np.ndarray) -> dict[str, np.ndarray]:
        """is_parent (target is the source's parent), is_child, is_sibling, same_section, tree_distance."""
        ps, pt = self.parent[source], self.parent[target]
        common = np.zeros(len(source), dtype=np.int64)
        for start in range(0, len(source), CHUNK_ROWS):
            part = slice(start, start + CHUNK_ROWS)
            left = self.prefix[source[part]]
            same = (left == self.prefix[target[part]]) & (left >= 0)
            common[part] = np.cumprod(same, axis=1).sum(axis=1)
        return {
            "is_parent": (ps == target).astype(np.float32),
            "is_child": (pt == source).astype(np.float32),
            "is_sibling": ((ps == pt) & (ps >= 0)).astype(np.float32),
            "same_section": (common >= 1).astype(np.float32),
            "tree_distance": (self.depth[source] + self.depth[target] - 2 * common).astype(np.float32),
            "source_depth": self.depth[source].astype(np.float32),
            "target_depth": self.depth[target].astype(np.float32),
        }


def _prefix_ids(segments: list[list[str]], depth: int) -> np.ndarray:
    """An id per distinct path prefix, by page and prefix length; -1 past a page's depth."""
    ids: dict[tuple[str, ...], int] = {}
    prefix = np.full((len(segments), max(depth, 1)), -1, dtype=np.int64)
    for i, parts in enumerate(segments):
        for d in range(len(parts)):
            prefix[i, d] = ids.setdefault(tuple(parts[: d + 1]), len(ids))
    return prefix


def _undirected(content: sparse.csr_matrix) -> sparse.csr_matrix:
    both = ((content + content.T) > 0).astype(np.float32)
    return sparse.csr_matrix(both)


def adamic_adar_weights(content: sparse.csr_matrix) -> tuple[sparse.csr_matrix, np.ndarray]:
    """The undirected link graph and each page's weight as a common neighbour: 1/log(its degree), 0 for
    pages linked with nearly every page (sitewide content links say nothing)."""
    both = _undirected(content)
    degree = np.asarray(both.sum(axis=1)).ravel()
    cap = max(50.0, 5 * math.sqrt(both.shape[0]))
    weight = np.where((degree > 1) & (degree <= cap), 1.0 / np.log(np.maximum(degree, 2)), 0.0)
    return both, weight.astype(np.float32)


def _adamic_adar(content: sparse.csr_matrix) -> sparse.csr_matrix:
    """Adamic–Adar on the undirected link graph: common neighbours, each weighted (adamic_adar_weights)."""
    both, weight = adamic_adar_weights(content)
    return sparse.csr_matrix(both @ sparse.diags(weight) @ both)


def _graph_pairs(scores: sparse.csr_matrix, k: int) -> pl.DataFrame:
    """Each row's k best other columns by score (pairs: source = row, target = column)."""
    sources, targets = [], []
    for row in range(scores.shape[0]):
        start, end = scores.indptr[row], scores.indptr[row + 1]
        cols, vals = scores.indices[start:end], scores.data[start:end]
        other = (cols != row) & (vals != 0)
        cols, vals = cols[other], vals[other]
        if not len(cols):
            continue
        if len(cols) > k:
            best = np.lexsort((cols, -vals))[:k]
            cols = cols[best]
        sources.append(np.full(len(cols), row, dtype=np.int64))
        targets.append(cols.astype(np.int64))
    if not sources:
        return pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64})
    return pl.DataFrame({"source": np.concatenate(sources), "target": np.concatenate(targets)})


def _neighbour_matrix(vectors: np.ndarray, k: int) -> sparse.csr_matrix:
    """Each page's k nearest other pages by cosine (row: page; pages without the field have none)."""
    n = len(vectors)
    present = _present(vectors)
    if len(present) < 2:
        return sparse.csr_matrix((n, n), dtype=np.float32)
    idx, scores = exact_top(vectors[present], vectors[present], k + 1, query_ids=np.arange(len(present)))
    rows = np.repeat(np.arange(len(present)), idx.shape[1])
    keep = idx.ravel() != rows  # the page itself
    return sparse.csr_matrix(
        (scores.ravel()[keep], (present[rows[keep]], present[idx.ravel()[keep]])), shape=(n, n)
    )


def _present(vectors: np.ndarray) -> np.ndarray:
    """The rows whose field has text (an empty field embeds as a zero row)."""
    return np.flatnonzero(np.abs(vectors).sum(axis=1) > 0)


def _listing_pairs(content: sparse.csr_matrix, neighbours: sparse.csr_matrix, k: int) -> pl.DataFrame:
    """For each target, the k sources whose in-content links go most to the target's nearest pages: a
    page that lists pages like this one (a blog index, a category) is where it belongs."""
    by_target = sparse.csr_matrix(neighbours @ content.T)  # [target, source]: similarity to what it lists
    pairs = _graph_pairs(by_target, k)
    return pairs.select(pl.col("target").alias("source"), pl.col("source").alias("target"))


def _listing_similarity(
    content: sparse.csr_matrix, vectors: np.ndarray, source: np.ndarray, target: np.ndarray, top: int = 3
) -> np.ndarray:
    """Mean cosine between each target and the `top` pages most like it among those its source links
    to in the body (0 when the source links to none)."""
    out = np.zeros(len(source), dtype=np.float32)
    if not len(source):
        return out
    order = np.argsort(source, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(source[order]) != 0])
    for begin, end in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        rows = order[begin:end]
        src = int(source[rows[0]])
        listed = content.indices[content.indptr[src] : content.indptr[src + 1]]
        if not len(listed):
            continue
        sims = vectors[target[rows]] @ vectors[listed].T
        best = min(top, sims.shape[1])
        out[rows] = np.partition(sims, sims.shape[1] - best, axis=1)[:, -best:].mean(axis=1)
    return out


class PhraseIndex:
    """The target's phrases found in the source's text: its title and H1, and the anchors the site's
    links already use for it (each anchor weighted by its commonness: the share of that anchor's links
    that point to this target)."""

    def __init__(self, signals: SiteSignals, links: LinkGraph, options: CandidateOptions):
        self.signals, self.options = signals, options
        counts: dict[tuple[str, ...], Counter] = defaultdict(Counter)
        titled: dict[tuple[str, ...], set[int]] = defaultdict(set)
        for field in ("title", "h1"):
            for page, text in enumerate(signals.texts.get(field) or []):
                phrase = _phrase(text, options.max_phrase_words)
                if phrase:
                    titled[phrase].add(page)
        for target, anchor in zip(links.target.tolist(), links.anchor.tolist(), strict=True):
            phrase = _phrase(anchor, options.max_phrase_words)
            if phrase and " ".join(phrase) not in GENERIC_ANCHORS:
                counts[phrase][target] += 1
        self.titled = titled
        self.commonness: dict[tuple[str, ...], dict[int, float]] = {}
        for phrase in set(counts) | set(titled):
            linked = counts.get(phrase, Counter())
            # a title is one more vote for its page
            votes = Counter(linked) + Counter(dict.fromkeys(titled.get(phrase, ()), 1))
            total = sum(votes.values())
            self.commonness[phrase] = {t: v / total for t, v in votes.items()}
        self.first_words = {p[0] for p in self.commonness}

    def find(self) -> pl.DataFrame:
        """source, target, mention_commonness, mention_words, mention_title, offset (first character)."""
        rows: dict[tuple[int, int], list] = {}
        body = self.signals.texts.get("body") or [None] * self.signals.n
        meta = self.signals.texts.get("meta_description") or [None] * self.signals.n
        longest = self.options.max_phrase_words
        for source in range(self.signals.n):
            text = body[source] or meta[source]
            if not text:
                continue
            matches = list(_TOKEN.finditer(text.lower()))
            tokens = [m.group() for m in matches]
            for i, token in enumerate(tokens):
                if token not in self.first_words:
                    continue
                for length in range(1, min(longest, len(tokens) - i) + 1):
                    phrase = tuple(tokens[i : i + length])
                    targets = self.commonness.get(phrase)
                    if not targets:
                        continue
                    for target, share in targets.items():
                        if target == source:
                            continue
                        titled = target in self.titled.get(phrase, ())
                        seen = rows.get((source, target))
                        if seen is None or (share, length) > (seen[0], seen[1]):
                            rows[(source, target)] = [share, length, titled, matches[i].start()]
                        elif titled:
                            seen[2] = True
        if not rows:
            return pl.DataFrame(
                schema={
                    "source": pl.Int64, "target": pl.Int64, "mention_commonness": pl.Float32,
                    "mention_words": pl.Float32, "mention_title": pl.Float32, "mention_offset": pl.Int64,
                }
            )  # fmt: skip
        keys = np.array(list(rows), dtype=np.int64)
        values = list(rows.values())
        found = pl.DataFrame(
            {
                "source": keys[:, 0],
                "target": keys[:, 1],
                "mention_commonness": np.array([v[0] for v in values], dtype=np.float32),
                "mention_words": np.array([v[1] for v in values], dtype=np.float32),
                "mention_title": np.array([v[2] for v in values], dtype=np.float32),
                "mention_offset": np.array([v[3] for v in values], dtype=np.int64),
            }
        )
        # the strongest mentions per source: specific (common for this target) and long phrases first
        return (
            found.sort(
                ["source", "mention_commonness", "mention_words", "target"],
                descending=[False, True, True, False],
            )
            .group_by("source", maintain_order=True)
            .head(self.options.mentions_per_page)
        )


def _phrase(text: str | None, max_words: int) -> tuple[str, ...] | None:
    if not text:
        return None
    tokens = tuple(_TOKEN.findall(text.lower()))
    if not tokens or len(tokens) > max_words or (len(tokens) == 1 and len(tokens[0]) < 3):
        return None
    return tokens


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


def serp_scores(serp: pl.DataFrame, depth: int) -> pl.DataFrame:
    """source, target, serp_score: 1 for the target first in the source's SERP, 1/depth for last."""
    best_rank = pl.col("rank").min()
    return serp.group_by("source", "target").agg(
        ((depth - best_rank + 1) / depth).cast(pl.Float32).alias("serp_score")
    )


def _pair_features(
    pairs: pl.DataFrame,
    signals: SiteSignals,
    proposals: Proposals,
    hierarchy: UrlTree,
    serp: pl.DataFrame,
    options: CandidateOptions,
) -> pl.DataFrame:
    """The FEATURES that each pair has on its own (CandidateBuilder.source_features adds the others)."""
    s = pairs["source"].to_numpy()
    t = pairs["target"].to_numpy()
    v = signals.vectors
    links, content = proposals.links, proposals.content
    navigation = links.adjacency(signals.n, content=False)
    incoming = sparse.csr_matrix(content.T)  # row t: the pages linking to t
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
        "adamic_adar": _lookup(proposals.adamic_adar, s, t),
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
    return (
        pairs.with_columns(pl.Series(name, values, dtype=pl.Float32) for name, values in columns.items())
        .join(proposals.mentions, on=["source", "target"], how="left", maintain_order="left")
        .join(
            serp_scores(serp, options.serp_depth), on=["source", "target"], how="left", maintain_order="left"
        )
        .with_columns(
            pl.col("mention_commonness", "mention_words", "mention_title", "serp_score").fill_null(0.0)
        )
    )
