"""Scored link candidates, kept across re-crawls.

A pair's features read a few things of its two pages — texts, URL and parent, topic, in-content links both
ways (with its link neighbours' Adamic–Adar weights), navigation links, menu children — plus two things of
the pair itself, the phrases of the target found in the source's text and the target's place in the source's
SERP, and, for the two ranks and the listing similarity, the source's other candidates. So after a re-crawl,
once the pairs are proposed again (cheap), only the new pairs, the pairs of a changed page and the pairs
whose phrase match or SERP place changed get their features again; the per-source features are taken again
over all pairs; only the rows whose features changed are scored again (all of them
when the ranker was fitted again); and only the rows that differ are written. Like a full build, an update
goes a chunk of source pages at a time, reading the last build's rows of those pages only. The result
equals a full build on the same inputs (a test compares them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.frames import owned
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.relevance.candidate_features import FEATURES, Proposals, of_sources
from interlink_pipeline.core.relevance.candidate_summary import KEY, CandidateSummary
from interlink_pipeline.core.relevance.link_candidates import FEATURE_CHUNK, CandidateBuilder
from interlink_pipeline.core.warehouse.store import RowChanges, SpilledRows

# Bumped whenever what a build computes from the same inputs changes: the next build is then full.
BUILD_FORMAT = 2  # 2: Adamic–Adar summed per pair
# Above this share of changed pages, one full build costs less than the comparisons.
FULL_BUILD_SHARE = 0.25
PAIR = ["source", "target"]
MENTION = ["mention_commonness", "mention_words", "mention_title", "mention_offset"]
PAIR_INPUTS = [*MENTION, "serp_score"]  # a pair's own inputs, compared pair by pair (not in the page hash)
STORED = ["probability", "rank", "origins", *FEATURES, "mention_offset"]  # columns a row may differ in
# the features a pair has on its own; the others are taken over each source's candidates together
LOCAL = [f for f in FEATURES if f not in ("rank_title", "rank_body", "listing_similarity")] + [
    "mention_offset"
]
PAGE_STATE = ("page_id", "inputs_hash", "settings_hash", "scored_by")  # what a build reads of the last


Probability = Callable[[pl.DataFrame], np.ndarray]  # rows with FEATURES -> the ranker's probabilities


@dataclass(frozen=True)
class KeptCandidates:
    """The last build of a site: its ml.candidate_pages rows, and a reader of its ml.link_candidates rows
    (source_page_id, target_page_id, and the STORED columns) from some source pages (their page ids)."""

    pages: pl.DataFrame  # page_id, inputs_hash, settings_hash, scored_by
    rows_from: Callable[[pl.Series], pl.DataFrame]


@dataclass
class ScoredCandidates:
    """What a build found and how to write it: all rows, spilled a chunk at a time (a full build), or a
    patch of the last build's rows; and what it recomputed."""

    summary: CandidateSummary
    write: SpilledRows | RowChanges
    pages: pl.DataFrame  # ml.candidate_pages rows without the site
    mode: str  # full or incremental
    why: str
    pages_changed: int  # changed or added since the last build (all pages for a full build)
    pairs_featured: int  # pairs whose features were computed
    pairs_scored: int  # rows the ranker scored
    rows_removed: int = 0

    def build_summary(self) -> dict[str, object]:
        """What the build did and why (the run's metadata)."""
        return {
            "build": self.mode,
            "build_why": self.why,
            "pages_changed": self.pages_changed,
            "pairs_featured": self.pairs_featured,
            "pairs_scored": self.pairs_scored,
            "rows_written": self.write.height,
            "rows_removed": self.rows_removed,
            "rows_reused": self.summary.candidates - self.write.height,
        }


def settings_hash(builder: CandidateBuilder, model_id: str) -> str:
    """What the features of the same pages depend on besides the pages: settings, features, model, code."""
    described = {
        "format": BUILD_FORMAT,
        "features": FEATURES,
        "candidates": asdict(builder.options),
        "embedding_model": model_id,
        "polars": pl.__version__,  # its hashes make the pages' hashes
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def page_inputs(builder: CandidateBuilder, proposals: Proposals, page_ids: pl.Series) -> pl.Series:
    """Per page row, a hash of everything a candidate pair's features read of that page (see the module's
    docstring): a pair whose pages keep their hash, and whose proposal and phrase match are unchanged,
    keeps its features."""
    signals, links, n = builder.signals, proposals.links, builder.signals.n
    ids = page_ids.cast(pl.String)
    parent = builder.hierarchy.parent
    own = pl.DataFrame(
        {
            **{f"text_{name}": pl.Series(texts, dtype=pl.String) for name, texts in signals.texts.items()},
            "path": pl.Series(signals.paths, dtype=pl.String),
            "parent": ids.gather(np.maximum(parent, 0)).scatter(np.flatnonzero(parent < 0), None),
            "cluster": signals.cluster,
            "duplicate_key": pl.Series(signals.duplicate_key or [None] * n, dtype=pl.String),
        }
    )
    content = proposals.content.tocoo()
    navigation = proposals.navigation.tocoo()
    both, weight = proposals.undirected, proposals.neighbour_weight
    both = both.tocoo()
    sections = links.sections.pairs()
    lists = {
        "links_out": (content.row, ids.gather(content.col)),
        "links_in": (content.col, ids.gather(content.row)),
        "navigation_out": (navigation.row, ids.gather(navigation.col)),
        "link_neighbours": (
            both.row,
            ids.gather(both.col) + "|" + pl.Series(weight[both.col]).cast(pl.String),
        ),
        "menu_children": (sections["source"], ids.gather(sections["target"])),
    }
    hashed = [_hashed_lists(rows, values, n).alias(name) for name, (rows, values) in lists.items()]
    return own.with_columns(hashed).hash_rows(seed=0).cast(pl.String)


def _hashed_lists(rows: np.ndarray | pl.Series, values: pl.Series, n: int) -> pl.Series:
    """Per page row 0..n-1, a hash of the sorted values given for it (0 for none)."""
    hashed = (
        pl.DataFrame({"row": pl.Series(rows, dtype=pl.Int64), "value": values})
        .group_by("row")
        .agg(pl.col("value").sort())
        .with_columns(pl.col("value").hash(seed=2))
    )
    out = np.zeros(n, dtype=np.uint64)
    out[hashed["row"].to_numpy()] = hashed["value"].to_numpy()
    return pl.Series(out)


def score_candidates(
    builder: CandidateBuilder,
    links: LinkGraph,
    page_ids: pl.Series,
    probability: Probability,
    scored_by: str,
    settings: str,
    spilled: SpilledRows,
    kept: KeptCandidates | None = None,
    chunk: int = FEATURE_CHUNK,
) -> ScoredCandidates:
    """The site's candidates for `links`, scored by `probability` (the ranker fitted in run `scored_by`),
    `chunk` source pages at a time: all rows, spilled into `spilled`, or, from `kept` (the last build)
    when that was built with the same `settings` and few pages changed since, the rows that differ from
    it."""
    ids = page_ids.cast(pl.String)
    proposals = builder.proposals(links)
    inputs = pl.DataFrame({"page_id": ids, "inputs_hash": page_inputs(builder, proposals, ids)})
    why = _full_build_reason(kept, settings)
    if why is None:
        changed = inputs.join(kept.pages, on=["page_id", "inputs_hash"], how="anti")
        removed = kept.pages.join(inputs, on="page_id", how="anti").height
        why = f"{changed.height:,} of {len(ids):,} pages changed or added, {removed:,} removed"
        if changed.height + removed <= FULL_BUILD_SHARE * len(ids):
            refitted = kept.pages["scored_by"][0] != scored_by
            update = _Update(builder, proposals, inputs, changed, probability, refitted)
            return update.written(kept, spilled, chunk, settings, scored_by, why)
        why += ": a full build is cheaper"
    summary = CandidateSummary()
    for featured in builder.chunks(proposals, chunk):
        rows = _in_page_ids(
            featured.with_columns(pl.Series("probability", probability(featured), dtype=pl.Float32)), ids
        )
        summary.add(rows)
        spilled.add(rows)
    pages = _pages(inputs, summary, settings, scored_by)
    built = summary.candidates
    return ScoredCandidates(summary, spilled, pages, "full", why, len(ids), built, built)


def _full_build_reason(kept: KeptCandidates | None, settings: str) -> str | None:
    if kept is None or kept.pages.is_empty():
        return "no earlier build of this site (or a rebuild was asked for)"
    if kept.pages["settings_hash"][0] != settings:
        return "the features, candidate settings or embedding model changed"
    return None


class _Update:
    """A build from the last one (see the module's docstring), a chunk of source pages at a time."""

    def __init__(
        self,
        builder: CandidateBuilder,
        proposals: Proposals,
        inputs: pl.DataFrame,
        changed: pl.DataFrame,
        probability: Probability,
        refitted: bool,
    ):
        self.builder, self.proposals, self.inputs, self.changed = builder, proposals, inputs, changed
        self.probability, self.refitted = probability, refitted
        self.ids = inputs["page_id"]
        self.index = pl.DataFrame({"page_id": self.ids, "row": np.arange(len(self.ids), dtype=np.int64)})
        self.changed_rows = changed.join(self.index, on="page_id")["row"].implode()
        self.featured = self.scored = 0

    def written(
        self, kept: KeptCandidates, spilled: SpilledRows, chunk: int, settings: str, scored_by: str, why: str
    ) -> ScoredCandidates:
        """Every chunk's rows that differ from the kept ones, spilled; the kept rows that went, by key."""
        summary, removed = CandidateSummary(), []
        sources = self.proposals.pairs["source"].to_numpy()
        for start in range(0, len(self.ids), chunk):
            low, high = np.searchsorted(sources, [start, start + chunk])
            before = kept.rows_from(self.ids.slice(start, chunk))
            rows = self.rows(self.proposals.pairs.slice(low, high - low), before)
            summary.add(rows)
            spilled.add(_differing(rows, before))
            removed.append(owned(before.join(rows, on=list(KEY), how="anti").select(KEY)))
        gone = kept.pages.join(self.inputs, on="page_id", how="anti")["page_id"]
        removed += [kept.rows_from(gone.slice(at, chunk)).select(KEY) for at in range(0, len(gone), chunk)]
        deleted = pl.concat(removed) if removed else pl.DataFrame(schema={k: pl.String for k in KEY})
        return ScoredCandidates(
            summary,
            RowChanges(KEY, spilled, deleted),
            _pages(self.inputs, summary, settings, scored_by),
            "incremental",
            why,
            self.changed.height,
            self.featured,
            self.scored,
            deleted.height,
        )

    def rows(self, pairs: pl.DataFrame, kept_rows: pl.DataFrame) -> pl.DataFrame:
        """The scored rows of some sources' proposed `pairs`, from those sources' `kept_rows`: features
        for the pairs that need them, the ranks again, scores for the rows whose features changed."""
        builder, proposals = self.builder, self.proposals
        before = _kept_in_rows(kept_rows, self.index)
        needed, reused = self._pairs_to_feature(pairs, before)
        frame = builder.source_features(
            proposals,
            pl.concat([builder.pair_features(proposals, needed), reused], how="diagonal_relaxed").sort(PAIR),
        )
        frame, rescored = _scored(frame, before, self.probability, self.refitted)
        self.featured += needed.height
        self.scored += int(rescored.sum())
        return _in_page_ids(frame, self.ids)

    def _pairs_to_feature(
        self, pairs: pl.DataFrame, before: pl.DataFrame
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(needed, reused): the `pairs` whose features are computed again — new pairs, the pairs of a
        changed page, the pairs whose phrase match or SERP place changed — and the others with their kept
        LOCAL features."""
        mentions = of_sources(self.proposals.mentions, pairs).select(*PAIR, *MENTION)
        pairs = (
            pairs.join(mentions, on=PAIR, how="left", maintain_order="left")
            .join(of_sources(self.builder.serp_scores, pairs), on=PAIR, how="left", maintain_order="left")
            .join(
                before.select(
                    *PAIR,
                    *(pl.col(c).alias(f"{c}_before") for c in PAIR_INPUTS),
                    pl.lit(True).alias("kept"),
                ),
                on=PAIR,
                how="left",
                maintain_order="left",
            )
        )
        # a pair without a phrase match or SERP place has nulls here and zeros (offset: null) stored
        found = [pl.col(c).fill_null(0) if c != "mention_offset" else pl.col(c) for c in PAIR_INPUTS]
        fresh = (
            pl.col("kept").is_null()
            | pl.col("source").is_in(self.changed_rows)
            | pl.col("target").is_in(self.changed_rows)
            | pl.any_horizontal(
                f.ne_missing(pl.col(f"{c}_before")) for f, c in zip(found, PAIR_INPUTS, strict=True)
            )
        )
        needed = pairs.filter(fresh).select(*PAIR, "origins")
        reused = (
            pairs.filter(~fresh)
            .select(*PAIR, "origins")
            .join(before.select(*PAIR, *LOCAL), on=PAIR, how="left", maintain_order="left")
        )
        return needed, reused


def _kept_in_rows(rows: pl.DataFrame, index: pl.DataFrame) -> pl.DataFrame:
    """The last build's rows between pages still there, keyed by page rows (source, target) as a new
    build's rows are."""
    return (
        rows.join(index.rename({"page_id": "source_page_id", "row": "source"}), on="source_page_id")
        .join(index.rename({"page_id": "target_page_id", "row": "target"}), on="target_page_id")
        .drop(KEY)
        .with_columns(pl.col("mention_offset").cast(pl.Int64))
    )


def _scored(
    frame: pl.DataFrame, before: pl.DataFrame, probability: Probability, refitted: bool
) -> tuple[pl.DataFrame, np.ndarray]:
    """The frame with each row's probability, and which rows the ranker scored: all of them when it was
    `refitted` since the last build, else those whose features differ from their kept row's."""
    # a row keeps its probability while its features and the ranker are those that gave it (compared by
    # a hash of the row's features: two full-width frames side by side would double the step's memory)
    frame = frame.with_columns(_row_hashes(frame, before.schema, FEATURES).alias("features_hash")).join(
        before.select(*PAIR, "probability").with_columns(
            _row_hashes(before, before.schema, FEATURES).alias("hash_before")
        ),
        on=PAIR,
        how="left",
        maintain_order="left",
    )
    rescored = (
        frame.select(pl.col("probability").is_null() | (pl.col("features_hash") != pl.col("hash_before")))
        .to_series()
        .to_numpy()
    )
    frame = frame.drop("features_hash", "hash_before")
    if refitted:  # another fit: every row is scored again
        rescored[:] = True
    scores = frame["probability"].to_numpy(allow_copy=True).copy()
    scores[rescored] = probability(frame.filter(pl.Series(rescored)))
    return frame.with_columns(pl.Series("probability", scores, dtype=pl.Float32)), rescored


def _in_page_ids(frame: pl.DataFrame, ids: pl.Series) -> pl.DataFrame:
    """ml.link_candidates rows (without the site) from scored pairs of page rows in (source, target)
    order; rank 1 is each source's most probable candidate (ties by target)."""
    return frame.select(
        ids.gather(frame["source"]).alias("source_page_id"),
        ids.gather(frame["target"]).alias("target_page_id"),
        "probability",
        pl.col("probability").rank("ordinal", descending=True).over("source").cast(pl.Int32).alias("rank"),
        "origins",
        *FEATURES,
        pl.col("mention_offset").cast(pl.Int32),
    )


def _row_hashes(frame: pl.DataFrame, schema: pl.Schema, columns: list[str]) -> pl.Series:
    """A hash of each row's `columns`, cast to `schema` (the stored types) so equal values hash alike."""
    return frame.select(pl.col(c).cast(schema[c]) for c in columns).hash_rows(seed=3)


def _differing(rows: pl.DataFrame, before: pl.DataFrame) -> pl.DataFrame:
    """The `rows` that are new or differ from the `before` row of the same pair in any stored column."""
    hashes = before.select(*KEY).with_columns(_row_hashes(before, before.schema, STORED).alias("hash_before"))
    compared = rows.with_columns(_row_hashes(rows, before.schema, STORED).alias("row_hash")).join(
        hashes, on=list(KEY), how="left", maintain_order="left"
    )
    return compared.filter(pl.col("row_hash").ne_missing(pl.col("hash_before"))).select(rows.columns)


def _pages(inputs: pl.DataFrame, summary: CandidateSummary, settings: str, scored_by: str) -> pl.DataFrame:
    """ml.candidate_pages rows (without the site)."""
    counts = summary.per_source().rename({"source_page_id": "page_id"})
    return inputs.join(counts, on="page_id", how="left", maintain_order="left").select(
        "page_id",
        pl.col("candidates").fill_null(0).cast(pl.Int32),
        "inputs_hash",
        pl.lit(settings).alias("settings_hash"),
        pl.lit(scored_by).alias("scored_by"),
    )
