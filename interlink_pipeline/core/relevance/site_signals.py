"""What a site's candidates are built from (SiteSignals, one row per kept page) and how many pairs each
signal proposes (CandidateOptions)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.ml.ann_search import APPROXIMATE_ABOVE, RECALL_FLOOR, Approximate
from interlink_pipeline.core.relevance.text_neighbours import NeighbourStore
from interlink_pipeline.core.settings import setting

TEXT_FIELDS = ("title", "h1", "meta_description", "body")


@dataclass(frozen=True)
class CandidateOptions:
    """How many pairs each signal proposes per source page (the `candidate_settings` resource)."""

    neighbours_per_field: int = setting(20, "Nearest pages per text field.", ge=1)
    children_per_page: int = setting(50, "Pages below in the URL path, most similar first.", ge=0)
    siblings_per_page: int = setting(20, "Pages under the same parent, most similar first.", ge=0)
    graph_per_page: int = setting(20, "Best pages by Adamic–Adar on the existing links.", ge=0)
    mentions_per_page: int = setting(30, "Targets whose phrases the source's text holds.", ge=0)
    listings_per_page: int = setting(
        20, "Sources whose in-content links go to the pages most like the target.", ge=0
    )
    serp_depth: int = setting(10, "SERP positions that count as evidence.", ge=1)
    max_phrase_words: int = setting(8, "Longest phrase looked for in texts.", ge=1)
    approximate_above: int = setting(
        APPROXIMATE_ABOVE,
        "Pages above which a field's nearest pages come from an approximate index (HNSW), kept only where "
        "its recall on a sample reaches recall_floor (else searched wider, then exactly).",
        ge=1,
    )
    recall_floor: float = setting(
        RECALL_FLOOR, "Lowest recall@k an approximate search is kept at.", ge=0, le=1
    )

    def approximate(self, k: int) -> Approximate:
        return Approximate(self.approximate_above, self.recall_floor, k)


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
