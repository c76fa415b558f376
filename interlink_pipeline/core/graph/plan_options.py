"""The plan's settings (PlanOptions), the bounds a plan needs them within, and the out-link budgets they
give each page."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.graph.site_sections import SiteSections


@dataclass(frozen=True)
class PlanOptions:
    """Every field is a `link_plan` config setting of the same name."""

    out_link_budget: int = 10  # contextual (in-content) links per page, existing ones included
    hub_links: int = 20  # links from the home page to hubs, existing ones included
    section_links: int = 20  # in-content links of a section index (menu parent, listing), existing included
    min_inlinks: int = 1
    max_inlinks: int = 20
    max_depth: int = 4
    exact_centrality_below: int = 5_000
    centrality_samples: int = 512
    recompute_centrality_above: float = 0.05  # share of relatedness edges changed since a kept estimate
    anchor_max_words: int = 6  # anchors are whole phrases of at most this many words
    anchor_max_targets: int = 1  # an anchor text points at no more targets than this across the site
    min_probability: float = 0.1  # topical links less likely than this are never added to fill a budget
    keep_previous: bool = True  # keep the last plan's links that are still valid (a stable plan)


def check_options(options: PlanOptions) -> None:
    """Refuse settings no plan can be built under, saying what to change (an InputError: the user's)."""
    o = options
    if min(o.out_link_budget, o.max_depth) < 1 or min(o.hub_links, o.section_links) < 0:
        raise InputError(
            "out_link_budget and max_depth must be at least 1, hub_links and section_links at least 0."
        )
    if not 0 <= options.min_inlinks <= options.max_inlinks:
        raise InputError("min_inlinks must be between 0 and max_inlinks.")
    if not 0 <= options.min_probability <= 1:
        raise InputError("min_probability must be between 0 and 1.")


def out_link_budgets(n: int, sections: SiteSections, options: PlanOptions) -> np.ndarray:
    """Each page's in-content out-links allowed, existing ones included: `out_link_budget`, and
    `section_links` for a section index (a menu parent or the first page of a paginated listing)."""
    budget = np.full(n, options.out_link_budget, dtype=np.int64)
    budget[sections.indexes] = max(options.out_link_budget, options.section_links)
    return budget
