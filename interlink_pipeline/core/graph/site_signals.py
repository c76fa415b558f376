"""What a site's candidates are built from (SiteSignals, one row per kept page) and how many pairs each
signal proposes (CandidateOptions)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.text_neighbours import NeighbourStore

TEXT_FIELDS = ("title", "h1", "meta_description", "body")


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
