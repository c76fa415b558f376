"""The values some columns of the contract may hold: declared with the tables, so that loading the
contract loads no step's code (the cleaning, the planner), and the steps write what the tables accept."""

# staging.excluded_pages.reason: why a crawled row is not a page
EXCLUSION_REASONS = (
    "invalid_url",
    "other_host",
    "not_html",
    "no_response",
    "redirect",
    "client_error",
    "server_error",
    "non_200",
    "blocked_by_robots",
    "noindex",
    "canonicalised",
    "non_indexable",
    "paginated",
    "parameter_url",
    "duplicate_url",
    "no_text",
)
# graph.link_plan.reason: which of the planner's steps chose a link
PLAN_REASONS = ("hub", "section", "topical", "orphan-rescue", "component-bridge", "depth-shortcut")
# the reasons of the plan's structure steps: links a page needs, from the best source it can get
STRUCTURAL_REASONS = ("orphan-rescue", "component-bridge", "depth-shortcut")
# graph.link_plan.confidence: a planned link's band (relevance/confidence.py)
CONFIDENCE_BANDS = ("high", "medium", "low", "not scored")
# graph.link_plan.placement: where a planned link goes on its source; the last two take its in-content budget
PLACEMENTS = ("home", "listing", "contextual", "related")
IN_CONTENT = ("contextual", "related")
# graph.link_plan_changes.change: a link against the plan before
PLAN_CHANGES = ("kept", "added", "removed", "not kept")
# graph.link_decisions.decision: what an editor decided about a planned link
DECISIONS = ("accept", "reject")
# what became of an accepted link (decided_links.accepted_outcomes); the last never expected: the plan's
# link_plan_keeps_accepted check
ACCEPTED_LIVE, ACCEPTED_IN_PLAN, NOT_KEPT = "live on the site", "in the plan", "not kept: "
PLANNER_MISSED = "the planner left it out"
# graph.site_metrics.links_known: how the site's existing links are known (All Inlinks, the crawl's counts)
LINKS_KNOWN = ("links", "counts", "none")
# what a user is told when the existing links are not read from an All Inlinks export
LINKS_NOTES = {
    "counts": "No All Inlinks export: the existing links are known by count only (the crawl's Unique Inlinks "
    "and Crawl Depth). Orphans are the pages with no in-links in the crawl; the plan rescues those, brings "
    "pages deeper than max_depth up and adds topical links within each page's budget.",
    "none": "No All Inlinks export, and the crawl has no Inlinks or Crawl Depth column: the existing links "
    "are unknown, so 'after' is the plan alone and there is no 'before'.",
}
