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

from collections.abc import Callable, Iterator

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.faults import fault_point
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.ml.page_neighbours import Increment
from interlink_pipeline.core.relevance.candidate_features import (
    FEATURES,
    Proposals,
    own_features,
    serp_scores,
)
from interlink_pipeline.core.relevance.link_signals import (
    adamic_adar_top,
    adamic_adar_weights,
    listing_pairs,
    listing_similarity,
)
from interlink_pipeline.core.relevance.phrases import PhraseIndex
from interlink_pipeline.core.relevance.site_signals import TEXT_FIELDS, CandidateOptions, SiteSignals
from interlink_pipeline.core.relevance.text_neighbours import neighbour_matrix, rows_with_text, similar_pairs
from interlink_pipeline.core.relevance.url_tree import UrlTree

# Parents with more pages below them than this have their pages' siblings kept in the NeighbourStore: a
# re-crawl searches only the changed pages of a large section, the rest take a fraction of a second afresh.
KEPT_SIBLINGS_ABOVE = 2000
# source pages whose candidates get their features at once (CandidateBuilder.features)
FEATURE_CHUNK = 5000

ORIGINS = ("similar", "hierarchy", "graph", "mention", "serp", "listing", "menu")
# a pair's origins are gathered as bit flags (an OR per pair is far cheaper than joining strings)
_ORIGIN_BIT = {name: 1 << i for i, name in enumerate(ORIGINS)}
_ORIGIN_NAMES = {
    flags: "+".join(sorted(name for name, bit in _ORIGIN_BIT.items() if flags & bit))
    for flags in range(1, 1 << len(ORIGINS))
}


def _origin(name: str) -> pl.Expr:
    return pl.lit(_ORIGIN_BIT[name], dtype=pl.UInt8).alias("origin")


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
        self.serp_scores = serp_scores(self.serp, self.options.serp_depth)  # source, target, serp_score
        kept_parents, kept_siblings = self._kept_siblings()
        self.fixed = pl.concat(
            [
                similar_pairs(self.neighbours).with_columns(_origin("similar")),
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
        if store is None or len(rows_with_text(vectors)) < 2:
            return neighbour_matrix(vectors, k)
        self.searches[name] = store.search(
            name, vectors, self.signals.texts[name], k, approximate=self.options.approximate(k + 1)
        )
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
            self.options.approximate(self.options.siblings_per_page + 1),
        )
        return set(groups), store.pairs("siblings", self.options.siblings_per_page).select("source", "target")

    def searches_done(self) -> str:
        """Per text field, whether its neighbours were searched in full or updated, and why (metadata)."""
        return "; ".join(
            f"{name}: {done.mode} ({done.why}{done.search.said() if done.search else ''})"
            for name, done in self.searches.items()
        )

    def build(self, links: LinkGraph) -> pl.DataFrame:
        """Every proposed (source, target) pair without an existing in-content link, with its FEATURES
        and `origins` (the signals that proposed it, '+'-joined)."""
        return self.features(self.proposals(links))

    def proposals(self, links: LinkGraph, sources: pl.Series | None = None) -> Proposals:
        """The proposed pairs and their origins, before features; the `sources`' pairs only when given
        (the ranker's sampled training sources): their phrase matches and Adamic–Adar rows are the only
        ones computed, and the pairs are those of the whole site's proposals from those sources."""
        fault_point("candidate-proposals")
        signals, options = self.signals, self.options
        wanted = None
        if sources is not None:
            wanted = np.zeros(signals.n, dtype=bool)
            wanted[sources.to_numpy()] = True
        content = links.adjacency(signals.n, content=True)
        undirected, neighbour_weight = adamic_adar_weights(content)
        mentions = PhraseIndex(signals, links, options).find(wanted)
        proposed = [
            self.fixed,
            adamic_adar_top(undirected, neighbour_weight, options.graph_per_page, wanted).with_columns(
                _origin("graph")
            ),
            mentions.select("source", "target", _origin("mention")),
            listing_pairs(content, self.neighbours["title"], options.listings_per_page).with_columns(
                _origin("listing")
            ),
            links.sections.pairs().with_columns(_origin("menu")),
        ]
        # a pair is one integer key (source·n + target, ordered as the pairs are): grouping millions of
        # proposals on it holds a fraction of what grouping on two columns does
        n = signals.n
        pairs = (
            pl.concat(
                [
                    p.select((pl.col("source").cast(pl.Int64) * n + pl.col("target")).alias("pair"), "origin")
                    for p in proposed
                ]
            )
            .filter(pl.col("pair") // n != pl.col("pair") % n)
            .filter(pl.lit(True) if sources is None else (pl.col("pair") // n).is_in(sources.implode()))
            .group_by("pair")
            .agg(pl.col("origin").bitwise_or())
            .join(
                links.content_pairs().select((pl.col("source") * n + pl.col("target")).alias("pair")),
                on="pair",
                how="anti",
            )
            .sort("pair")
            .select(
                (pl.col("pair") // n).alias("source"),
                (pl.col("pair") % n).alias("target"),
                pl.col("origin").replace_strict(_ORIGIN_NAMES, return_dtype=pl.String).alias("origins"),
            )
        )
        if signals.duplicate_key is not None:
            keys = pl.Series(signals.duplicate_key, dtype=pl.String)
            same = keys.gather(pairs["source"]) == keys.gather(pairs["target"])
            pairs = pairs.filter(~same.fill_null(False))
        return Proposals(pairs, links, content, undirected, neighbour_weight, mentions)

    def features(
        self,
        proposals: Proposals,
        chunk: int = FEATURE_CHUNK,
        each: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
    ) -> pl.DataFrame:
        """The proposals' FEATURES, built by `chunks`; `each` turns a chunk's rows into what is kept of them
        (the backtest keeps their scores, not their features)."""
        keep = each or (lambda rows: rows)
        return pl.concat([keep(rows) for rows in self.chunks(proposals, chunk)])

    def chunks(self, proposals: Proposals, chunk: int = FEATURE_CHUNK) -> Iterator[pl.DataFrame]:
        """The proposals with their FEATURES, `chunk` source pages at a time, in (source, target) order. A
        pair's features depend on its source's other pairs, never on other sources', so the rows are the
        same whatever the chunk, and only a chunk's working columns are held at once (one empty chunk
        when nothing is proposed)."""
        pairs = proposals.pairs
        parts = pairs.with_columns((pl.col("source") // chunk).alias("part")).partition_by(
            "part", maintain_order=True, include_key=False
        )
        for part in parts or [pairs]:
            yield self.source_features(proposals, self.pair_features(proposals, part))

    def pair_features(self, proposals: Proposals, pairs: pl.DataFrame) -> pl.DataFrame:
        """`pairs` (some of the proposals) with the FEATURES a pair has on its own; source_features adds
        the others once every candidate of their sources is there."""
        return own_features(pairs, self.signals, proposals, self.hierarchy, self.serp_scores)

    def source_features(self, proposals: Proposals, pairs: pl.DataFrame) -> pl.DataFrame:
        """Every candidate of some sources, in (source, target) order, with the FEATURES computed over
        each source's candidates together: the target's rank among them by title and by body cosine (1 =
        the closest; ties share a rank, so a field a site lacks says nothing), and the listing
        similarity (one matrix product per source: the same whatever else is computed)."""
        s, t = pairs["source"].to_numpy(), pairs["target"].to_numpy()
        listing = listing_similarity(proposals.content, self.signals.vectors["title"], s, t)
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


def build_candidates(
    signals: SiteSignals, links: LinkGraph, options: CandidateOptions | None = None
) -> pl.DataFrame:
    """The candidates of one link set (see CandidateBuilder.build)."""
    return CandidateBuilder(signals, options).build(links)
