"""The plan's settings (PlanOptions), the bounds a plan needs them within, and the out-link budgets they
give each page."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.site_sections import SiteSections
from interlink_pipeline.core.settings import setting

# the pages no editor links from: the site's own pages about itself, its forms, and machine-made listings
UTILITY_PAGES = (
    r"/(tags?|archives?|authors?|etiquetas?|autor|search|buscar|suche|recherche)(/|\?|$)"
    r"|/(about|about-us|our-mission|our-story|who-we-are|contact|contact-us|contacto|kontakt|impressum|"
    r"imprint|legal|aviso-legal|mentions-legales|privacy|privacy-policy|politica-de-privacidad|cookies?|"
    r"cookie-policy|terms|terms-of-service|terms-and-conditions|disclaimer|account|my-account|mi-cuenta|"
    r"login|log-in|sign-in|signin|register|signup|sign-up|cart|basket|carrito|panier|warenkorb|checkout|"
    r"shipping|shipping-policy|delivery|delivery-information|returns|returns-policy|return-policy|refunds?|"
    r"refund-policy|envios|devoluciones|sitemap|quienes-somos|careers|jobs|newsletter|subscribe|thank-you|"
    r"gracias|sample-page|hello-world|"
    r"(client|contact|intake|registration|booking|enquiry|inquiry|request)-form)(-\d+)?(\.\w+)?/?$"
)


@dataclass(frozen=True)
class PlanOptions:
    """The `link_plan` step's settings (its Dagster config is derived from the `setting` fields)."""

    out_link_budget: int = setting(
        10,
        "In-content links per page, existing ones included (on a site whose typical page already carries "
        "more, added_link_budget applies instead).",
        ge=1,
    )
    added_link_budget: int = setting(
        5,
        "In-content links the plan may add per page on a site whose median page already carries more "
        "in-content links than out_link_budget (an encyclopedia): there the budget limits what the plan "
        "adds, not what the page holds.",
        ge=0,
    )
    structural_sources: int = setting(
        10,
        "How many of a page's most related pages (the ranker's candidates with evidence that both pages "
        "are about the same thing, at min_probability or more) may give it a structural link (an orphan "
        "rescue, a depth shortcut, a bridge), besides its own section index; a page none of them can "
        "link is left for an editor, not linked from wherever there is room.",
        ge=1,
    )
    hub_links: int = setting(20, "Links on the home page to hubs, existing ones included.", ge=0)
    listing_links: int = setting(
        10,
        "A page whose content already links more pages than this or than out_link_budget, whichever is "
        "fewer (and, on a link-rich site, than nine in ten of its pages do), is a listing: a structural "
        "link into its section may join its list beyond its budget. Raising out_link_budget past it never "
        "unmakes a listing.",
        ge=1,
    )
    section_links: int = setting(
        20,
        "In-content links of a section index (a page the site's menu lists others under), existing ones "
        "included.",
        ge=0,
    )
    min_inlinks: int = setting(1, "In-content in-link quota of the least central pages.", ge=0)
    max_inlinks: int = setting(20, "In-content in-link quota of the most central pages.", ge=0)
    max_depth: int = setting(4, "Click-depth target from the home page.", ge=1)
    exact_centrality_below: int = setting(5_000, "Pages below which betweenness is exact.", ge=0)
    centrality_samples: int = setting(512, "Sampled sources for estimated betweenness.", ge=8)
    recompute_centrality_above: float = setting(
        0.05,
        "A re-crawl reuses the last sampled betweenness estimate (new pages score 0) until this share of "
        "the relatedness graph's edges changed since it was measured; exact betweenness is always "
        "measured.",
        ge=0,
        le=1,
    )
    anchor_max_targets: int = setting(1, "Most pages one anchor text may point at across the site.", ge=1)
    sentence_pages: int = setting(
        10,
        "A phrase of the source's text that is one word or not the target's whole name (a word of its "
        "name, another anchor the site uses for it) is linked in its sentence only when, the phrase left "
        "out, the sentence is closer to the target than to all but this many of the site's other pages "
        "(by the pages' embedding model, the source not counted); else the link goes in the related block.",
        ge=1,
    )
    min_probability: float = setting(
        0.1,
        "Topical links less probable than this (by the site's ranker) are never added to fill a budget.",
        ge=0,
        le=1,
    )
    keep_previous: bool = setting(
        True,
        "Keep the previous plan's links whose pages are unchanged (a plan the team has half shipped stays"
        " put); false plans from scratch.",
    )
    new_links_per_reviewed_page: int = setting(
        1,
        "New links a re-run may add to a page an editor has decided links on, until they are decided too "
        "(links editors accepted and those already there at the page's last review do not count): the "
        "queue does not grow behind the editor; the others wait, counted in the plan's figures.",
        ge=0,
    )
    utility_pages: str = setting(
        UTILITY_PAGES,
        "Pages that never take a planned link, as source or target (a regular expression searched in each "
        "page's URL path, case ignored): about, contact, legal, shipping and returns, account, cart, forms, "
        "search, tag and archive pages and a blog engine's sample pages by default; an orphan among them is "
        "left to the site's menus, counted by the orphan check.",
    )
    generated_pages: str = setting(
        "",
        "Pages a generator writes from other sources (an API or command-line reference: a regular expression "
        "searched in each page's URL path, case ignored): never a planned link's source, since a link added "
        "to them is lost at the next build (edit the generator's source instead); they still take links. "
        "None by default: the site says which pages are generated, not their text.",
    )
    max_target_share: float = setting(
        0.03,
        "Most of a plan's links one page may take, as a share of them (at least 2; its structural links "
        "count, and it keeps its most probable topical ones): no page takes a plan over pages that need it.",
        ge=0,
        le=1,
    )
    striking_distance_from: float = setting(
        5.0,
        "With a Search Console export: the best average position of a page in striking distance (pages "
        "ranked this far or further, up to striking_distance_to, with at least the median impressions of "
        "such pages, take likely links from a lower bar and a full in-link quota).",
        ge=0,
    )
    striking_distance_to: float = setting(
        20.0, "The worst average position of a page in striking distance.", ge=0
    )
    rejected_returns_below: float = setting(
        0.5,
        "A link an editor rejected is planned again only once one of its pages keeps less than this share "
        "of its text's word triples since the decision (0: never again).",
        ge=0,
        le=1,
    )


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
    if options.striking_distance_from > options.striking_distance_to:
        raise InputError("striking_distance_from must not be above striking_distance_to.")
    for name in ("utility_pages", "generated_pages"):
        try:
            re.compile(getattr(options, name))
        except re.error as error:
            raise InputError(f"{name} is not a regular expression ({error}).") from None


def pages_matching(paths: pl.Series, pattern: str) -> np.ndarray:
    """Which pages a URL pattern names (utility_pages, generated_pages: searched in the path, case
    ignored)."""
    if not pattern:
        return np.zeros(paths.len(), dtype=bool)
    return paths.fill_null("").str.contains(f"(?i){pattern}").to_numpy()


@dataclass(frozen=True)
class LinkRoom:
    """Each page's in-content out-links allowed, existing ones included, and the rule that set them."""

    allowed: np.ndarray
    rule: str  # "total" (out_link_budget counts the page's links) or "added" (added_link_budget: new ones)
    why: str

    def left(self, content_out: np.ndarray) -> np.ndarray:
        """What each page may still take."""
        return np.maximum(0, self.allowed - content_out)


def link_room(content_out: np.ndarray, sections: SiteSections, options: PlanOptions) -> LinkRoom:
    """Each page's allowed in-content out-links (`content_out`: its existing ones): `out_link_budget`, and
    `section_links` for a section index (a menu parent or the first page of a paginated listing), existing
    links included — unless the site's median page already holds more than `out_link_budget`: then every
    page may add `added_link_budget` to what it holds, so that a link-rich site (an encyclopedia) does not
    leave its few link-poor pages as the only sources."""
    n = len(content_out)
    median = float(np.median(content_out)) if n else 0.0
    if median > options.out_link_budget:
        why = (
            f"the median page already has {median:g} in-content links, more than out_link_budget "
            f"({options.out_link_budget}): each page may add added_link_budget ({options.added_link_budget})"
        )
        return LinkRoom(content_out + options.added_link_budget, "added", why)
    budget = np.full(n, options.out_link_budget, dtype=np.int64)
    budget[sections.indexes] = max(options.out_link_budget, options.section_links)
    why = (
        f"the median page has {median:g} in-content links: each page holds up to out_link_budget "
        f"({options.out_link_budget}), existing links included"
    )
    return LinkRoom(budget, "total", why)
