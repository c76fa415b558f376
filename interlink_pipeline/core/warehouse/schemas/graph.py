"""graph.*: the link plan, its changes since the last plan, the graph metrics before and after it, the
backtests."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas.bases import PAGE_ID_LENGTH, PageTable, PairTable, SiteTable
from interlink_pipeline.core.warehouse.vocabularies import (
    CONFIDENCE_BANDS,
    DECISIONS,
    LINKS_KNOWN,
    PLACEMENTS,
    PLAN_CHANGES,
    PLAN_REASONS,
)

LINK_ID = (
    "Stable link id: MD5 prefix of the site and both page ids; the same pair of URLs keeps its id across "
    "plans, so an editor's decision about it holds on the next crawl."
)


class PlannedLink(PairTable, unique=("site", "source_page_id", "target_page_id")):
    """graph.link_plan: the links to add, each with its anchor text, score and reason."""

    link_id: str = pa.Field(str_length=PAGE_ID_LENGTH, description=LINK_ID)
    source_url: str = pa.Field(description="URL of the page to place the link on.")
    target_url: str = pa.Field(description="URL to link to.")
    anchor_text: str = pa.Field(
        str_length={"min_value": 1},
        description="Suggested anchor text: a phrase the source's text already uses for the target (in "
        "place: placement contextual), else the target's name, its H1 or title (with its parent's name when "
        "another page has it); never a generic phrase or a URL path; no anchor text points at more than "
        "anchor_max_targets pages.",
    )
    anchor_offset: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="Character offset of the anchor in the source page's body text (its meta description "
        "when it has none), when the anchor is a phrase already there: the link goes in place.",
    )
    sentence: str = pa.Field(
        nullable=True,
        description="The sentence of the source's text that holds the anchor (null when the link is not "
        "placed in the text).",
    )
    score: pl.Float32 = pa.Field(
        description="Evidence strength: the ranker's probability for candidates, the cosine for a similar "
        "page found by vector search, the centrality for hubs."
    )
    probability: pl.Float32 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="The ranker's probability that the site's editors would link the pair (null for a pair "
        "no signal proposed: hubs and structural links from the nearest page by vector search).",
    )
    reason: str = pa.Field(
        isin=list(PLAN_REASONS),
        description="hub, section, topical, orphan-rescue, component-bridge or depth-shortcut (see "
        "docs/how-it-works/link-plan.md).",
    )
    evidence: str = pa.Field(
        description="What proposed it: the candidate's origins ('+'-joined: similar, hierarchy, graph, "
        "mention, serp, listing, menu), 'semantic' (vector search), 'centrality' (hubs) or 'menu' "
        "(sections)."
    )
    placement: str = pa.Field(
        isin=list(PLACEMENTS),
        description="home: among the home page's links to sections; listing: in the list of an index page "
        "(a menu parent or a paginated listing's first page) that is a likely place for it, beyond its "
        "in-content budget; contextual: in the text, on the anchor where it stands in `sentence`; related: "
        "in the page's related-links block, the anchor the target's name (no sentence of the page names "
        "it well).",
    )
    in_navigation: bool = pa.Field(
        description="The source already links the target in its navigation (a menu, a sidebar): the plan "
        "adds it in the content."
    )
    weak: bool = pa.Field(
        description="A structural link (orphan-rescue, component-bridge, depth-shortcut) whose best source "
        "scores under min_probability: the page needs the link, but no page is a likely place for it."
    )
    alternative_source_urls: pl.List(pl.String) = pa.Field(
        description="A structural link's next best sources, best first (up to three; empty for the others)."
    )
    confidence: str = pa.Field(
        isin=list(CONFIDENCE_BANDS),
        description="high, medium, low or not scored: a topical link's by its probability; any other's by "
        "what the site's last backtest measured for its reason (see docs/reading-the-report.md).",
    )
    confidence_note: str = pa.Field(
        description="The band in a sentence, with what the backtest measured of it ('high: 7 in 10 orphan "
        "rescue links were the editors' own in the backtest (69 of 71)')."
    )
    planned_since: pl.Datetime = pa.Field(
        description="When the link entered the site's plan (UTC); a re-run keeps it with the link: those "
        "planned after the site's last decisions are new since the editors' last review."
    )
    added_because: str = pa.Field(
        description="Why it entered the plan then: in the site's first plan; its source (target) page is new "
        "in that crawl or changed; in place of a link its page lost (and why); the ranker was fitted again "
        "since the plan before (learning from the decisions made since); or newly chosen as the site's "
        "links, the candidates or the settings changed."
    )


class LinkDecision(PairTable, unique=("site", "link_id", "source_file", "file_digest")):
    """graph.link_decisions: editors' decisions about planned links, one row per link and version of a
    decisions file (history kept); a link's newest decision in a file's current version stands."""

    link_id: str = pa.Field(str_length=PAGE_ID_LENGTH, description=LINK_ID)
    source_url: str = pa.Field(description="URL of the page the link goes on, as the file gave it.")
    target_url: str = pa.Field(description="URL the link points to, as the file gave it.")
    decision: str = pa.Field(isin=list(DECISIONS), description="accept or reject.")
    note: str = pa.Field(nullable=True, description="The editor's note, when the file has one.")
    reason: str = pa.Field(
        nullable=True,
        isin=list(PLAN_REASONS),
        description="Why the plan had the link when it was decided (null: not in the plan then).",
    )
    source_sketch: pl.List(pl.Int64) = pa.Field(
        nullable=True,
        description="The source page's text when decided, as the 64 smallest hashes of its word triples: "
        "a rejected link is planned again only once a page keeps less than rejected_returns_below of it "
        "(null: decided before the sketches were kept; the link stays refused).",
    )
    target_sketch: pl.List(pl.Int64) = pa.Field(nullable=True, description="The target page's, the same way.")
    decided_at: pl.Datetime = pa.Field(
        description="When the decisions file was imported (UTC): the newest decision of a link stands."
    )
    source_file: str = pa.Field(description="The decisions file, as stored in the site's decisions/ folder.")
    row_number: pl.Int64 = pa.Field(ge=1, description="1-based data row in that file.")
    file_digest: str = pa.Field(
        nullable=True,
        description="The content of the file's version the row was read from (SHA-256 prefix): an edited "
        "file is read again (null: read before versions were kept; such a file's current content is "
        "taken as that version).",
    )
    superseded_at: pl.Datetime = pa.Field(
        nullable=True,
        description="When an edited version of the file replaced this row's version (UTC); the row is kept "
        "as history and no longer stands. Null: the file's current version.",
    )


class LiveLink(PairTable, unique=("site", "link_id")):
    """graph.live_links: links of a plan (or accepted by an editor) that a later crawl's All Inlinks shows in
    the source page's content: implemented, with the crawl they were first seen in."""

    link_id: str = pa.Field(str_length=PAGE_ID_LENGTH, description=LINK_ID)
    source_url: str = pa.Field(description="URL of the page the link is on.")
    target_url: str = pa.Field(description="URL it points to.")
    reason: str = pa.Field(
        nullable=True, isin=list(PLAN_REASONS), description="Why the plan had it (null: accepted only)."
    )
    decision: str = pa.Field(
        nullable=True, isin=list(DECISIONS), description="The editor's standing decision then, if any."
    )
    crawl_id: str = pa.Field(description="The crawl it was first seen in.")
    seen_at: pl.Datetime = pa.Field(description="When the plan that found it ran (UTC).")


class PageMetrics(PageTable, unique=("site", "page_id")):
    """graph.page_metrics: each page before (existing links, when known) and after the plan."""

    url: str = pa.Field(description="The page's URL.")
    cluster_id: pl.Int32 = pa.Field(nullable=True, description="Its topic cluster.")
    betweenness: pl.Float64 = pa.Field(ge=0, description="Betweenness centrality in the relatedness graph.")
    inlink_quota: pl.Int32 = pa.Field(
        ge=0, description="In-content in-links the plan fills up to (grows with centrality rank)."
    )
    is_hub: bool = pa.Field(
        description="A hub: linked from the home page's content, in the crawl or by the plan."
    )
    depth_before: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="Clicks from home; null when no path reaches the page (or no links export: unknown).",
    )
    depth_after: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Clicks from home with the plan; null when no path reaches the page."
    )
    inlinks_before: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="In-links from other pages (null: unknown)."
    )
    inlinks_after: pl.Int32 = pa.Field(ge=0, description="In-links with the plan.")
    outlinks_before: pl.Int32 = pa.Field(nullable=True, ge=0, description="Out-links to other pages.")
    outlinks_after: pl.Int32 = pa.Field(ge=0, description="Out-links with the plan.")
    pagerank_before: pl.Float64 = pa.Field(nullable=True, ge=0, description="Internal PageRank (sums to 1).")
    pagerank_after: pl.Float64 = pa.Field(ge=0, description="Internal PageRank with the plan.")
    planned_inlinks: pl.Int32 = pa.Field(ge=0, description="Links the plan adds to it.")
    planned_outlinks: pl.Int32 = pa.Field(ge=0, description="Links the plan adds on it.")
    plan_fingerprint: str = pa.Field(
        description="Hash of what the plan read of the page (URL, title, H1, meta description, text): the "
        "next plan keeps this plan's links of pages whose fingerprint is unchanged."
    )
    near_duplicate_of: str = pa.Field(
        nullable=True,
        description="An orphan left unlinked because it says what this orphan, rescued instead, says (their "
        "texts' cosine 0.95 or more): possible cannibalisation — merge, redirect or canonicalise one of them "
        "(null for every other page).",
    )
    left_for_editor: str = pa.Field(
        nullable=True,
        description="Why the plan left this page for an editor instead of linking it anyway: an orphan, a "
        "page too deep or cut off from the home page that none of its related pages could link (its best "
        "candidate sources, their probabilities and why each was passed over), or a near-duplicate orphan "
        "(the page it repeats: merge, redirect or canonicalise); null for every other page.",
    )


class LinkPlanChange(PairTable, unique=("site", "source_page_id", "target_page_id")):
    """graph.link_plan_changes: how this plan differs from the site's previous one, link by link."""

    source_url: str = pa.Field(description="URL of the page the link is placed on.")
    target_url: str = pa.Field(description="URL it links to.")
    reason: str = pa.Field(isin=list(PLAN_REASONS), description="Why the plan holding it chose it.")
    change: str = pa.Field(
        isin=list(PLAN_CHANGES),
        description="kept: in both plans; added: new in this plan (why: its added_because); removed: in the "
        "previous plan only; not kept: accepted by an editor, in neither plan (one of its pages is gone).",
    )
    why: str = pa.Field(
        description="still valid, planned again after a change, why a link is new (graph.link_plan's "
        "added_because), page removed, page changed: planned anew, now on the site, rejected by an editor, "
        "no link budget left on the source, waits: its page was reviewed and has its new links, "
        "no longer chosen; for a link an editor accepted that this plan cannot hold: 'accepted by an editor, "
        "not kept: its source page (its target page, both its pages) is gone from the crawl'."
    )
    computed_at: pl.Datetime = pa.Field(description="When this plan was computed (UTC).")


class SiteMetrics(SiteTable, unique=("site", "scenario")):
    """graph.site_metrics: the site's link graph before (existing links, when known) and after the plan."""

    scenario: str = pa.Field(
        isin=["before", "after"], description="before: existing links; after: plus the plan."
    )
    crawl_id: str = pa.Field(description="The crawl the pages came from.")
    computed_at: pl.Datetime = pa.Field(description="When the plan was made (UTC).")
    pages: pl.Int32 = pa.Field(ge=0, description="Pages in the graph.")
    links: pl.Int64 = pa.Field(ge=0, description="Distinct page-to-page links.")
    planned_links: pl.Int32 = pa.Field(ge=0, description="Links added by the plan (0 before).")
    orphan_pages: pl.Int32 = pa.Field(ge=0, description="Pages no other page links to (home excepted).")
    unreachable_pages: pl.Int32 = pa.Field(ge=0, description="Pages with no click path from the home page.")
    max_depth: pl.Int32 = pa.Field(ge=0, description="Deepest reachable page, in clicks from home.")
    median_depth: pl.Float64 = pa.Field(ge=0, description="Median clicks from home (reachable pages).")
    share_depth_le_3: pl.Float64 = pa.Field(ge=0, le=1, description="Share of pages within 3 clicks of home.")
    share_depth_le_5: pl.Float64 = pa.Field(ge=0, le=1, description="Share of pages within 5 clicks of home.")
    inlink_gini: pl.Float64 = pa.Field(ge=0, le=1, description="Inequality of in-links (0 = even).")
    mean_outlinks: pl.Float64 = pa.Field(ge=0, description="Links per page.")
    depth_histogram: str = pa.Field(description='JSON {"0": pages, "1": pages, …, "unreachable": pages}.')
    links_known: str = pa.Field(
        isin=list(LINKS_KNOWN),
        description="How the existing links are known: links (an All Inlinks export), counts (no export: "
        "the crawl's in-link counts and click depths only) or none (neither).",
    )
    waiting_for_review: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="Links the plan would add on pages editors have reviewed, held back until the new ones "
        "there are decided (new_links_per_reviewed_page; 0 before the plan; null: a plan made before this "
        "was counted).",
    )


class BacktestRun(SiteTable, unique=("site", "run_id")):
    """graph.backtest_runs: one row per backtest: a seeded share of the in-content links hidden, the plan
    rebuilt without them and scored against them, next to a same-budget top-title-cosine baseline."""

    run_id: str = pa.Field(description="Dagster run id.")
    ran_at: pl.Datetime = pa.Field(description="When it ran (UTC).")
    crawl_id: str = pa.Field(description="The crawl it ran on.")
    seed: pl.Int64 = pa.Field(description="Seed of the hidden sample.")
    fraction: pl.Float64 = pa.Field(ge=0, le=1, description="Share of in-content link pairs hidden.")
    hidden_links: pl.Int32 = pa.Field(
        ge=0, description="In-content link pairs hidden (the sampled pairs and the orphans' in-links)."
    )
    settings: str = pa.Field(description="JSON: candidate, ranker and plan settings used.")
    ranker: str = pa.Field(description="The ranker fitted without the hidden links, and why.")
    plan_links: pl.Int32 = pa.Field(ge=0, description="Links in the rebuilt plan.")
    plan_precision: pl.Float64 = pa.Field(
        ge=0, le=1, description="Share of the plan's links that were hidden."
    )
    plan_recall: pl.Float64 = pa.Field(ge=0, le=1, description="Share of the hidden links in the plan.")
    baseline_precision: pl.Float64 = pa.Field(
        ge=0, le=1, description="The same for as many top-title-cosine links."
    )
    baseline_recall: pl.Float64 = pa.Field(ge=0, le=1, description="Recall of that baseline.")
    k: pl.Int32 = pa.Field(ge=1, description="The k of the candidate figures.")
    candidate_precision_at_k: pl.Float64 = pa.Field(
        ge=0, le=1, description="Precision of each source's top-k candidates (sources with a hidden link)."
    )
    candidate_recall_at_k: pl.Float64 = pa.Field(ge=0, le=1, description="Recall of those top-k lists.")
    baseline_precision_at_k: pl.Float64 = pa.Field(
        ge=0, le=1, description="Precision of each source's top-k pages by title cosine."
    )
    baseline_recall_at_k: pl.Float64 = pa.Field(ge=0, le=1, description="Recall of those lists.")
    candidate_coverage: pl.Float64 = pa.Field(
        ge=0, le=1, description="Share of the hidden links among the candidates at all."
    )
    orphan_fraction: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="Share of the pages linked in content made orphans: every link into them hidden, "
        "navigation included (menu members and the home page excepted).",
    )
    orphaned_pages: pl.Int32 = pa.Field(nullable=True, ge=0, description="Pages made orphans.")
    orphan_rescues: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="The rebuilt plan's orphan rescues into those pages."
    )
    orphan_rescue_precision: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="Share of those rescues whose source linked to the orphan in content (null: none).",
    )
    orphan_baseline_precision: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="Share of the orphans whose most similar page by title linked to it in content: the "
        "rescue's baseline.",
    )
    decisions_learned: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="Editors' decisions the rebuilt ranker learned from (those about hidden links left out: "
        "their answer is what is measured; null: measured before decisions were counted).",
    )
    plan_precision_without_decisions: pl.Float64 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="The plan's precision with a ranker that ignores the editors' decisions, rebuilt in "
        "the same backtest (null: no decisions).",
    )
    precision_by_reason: str = pa.Field(
        description="JSON: per plan reason, links, hits, precision, recall (its share of the hidden links), "
        "mean probability, known / known_precision: its links into pages that lost an in-link to the "
        "hiding, and their precision (a structural link's target is forced; only its source is chosen), and "
        "reachable / reachable_precision: those into pages that lost one from a page within max_depth - 1 "
        "clicks of home once planned (the only pages a depth shortcut may come from)."
    )
    seconds: pl.Float64 = pa.Field(ge=0, description="Time the backtest took.")
    measured_in_run: str = pa.Field(
        nullable=True,
        description="The run that measured these figures: this one, or an earlier one whose backtest still "
        "stands (the site changed by at most remeasure_above since).",
    )
    intervals: str = pa.Field(
        nullable=True,
        description="JSON: each share above (plan, baseline and candidate precision and recall, coverage, "
        "the orphans' precision) -> [low, high], its 95% interval from 1,000 resamples of the pages it was "
        "measured on (source pages; orphans for the orphans' figures); precision_by_reason holds each "
        "reason's as precision_low / _high, known_precision_low / _high, reachable_precision_low / _high.",
    )
    precision_by_band: str = pa.Field(
        nullable=True,
        description="JSON: per confidence band of the rebuilt plan's links (high: probability at 3 x "
        "min_probability or more; medium: min_probability or more; low: under it; not scored: no "
        "probability), links, hits and precision: what the report and the exports say each band is worth.",
    )
