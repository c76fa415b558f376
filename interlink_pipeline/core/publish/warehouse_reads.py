"""What the spreadsheets and the HTML report read of a site from the warehouse: their SQL, in one place."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from interlink_pipeline.core.graph.decided_links import accepted_outcomes
from interlink_pipeline.core.ingest.site_links import content_page_pairs, existing_links
from interlink_pipeline.core.publish.page_drilldown import PAGE_FIGURES
from interlink_pipeline.core.publish.plan_figures import measured_plan
from interlink_pipeline.core.publish.report_parts import ReportData
from interlink_pipeline.core.warehouse import store
from interlink_pipeline.core.warehouse.database import query

# each link's standing decision: the newest of a file's current version (site_tables.standing_decisions)
STANDING_SQL = """
standing AS (
    SELECT link_id, source_page_id, target_page_id, source_url, target_url, reason, decided_at, decision, note
    FROM graph.link_decisions WHERE site = $1 AND superseded_at IS NULL
    QUALIFY row_number() OVER (PARTITION BY link_id ORDER BY decided_at DESC, source_file DESC) = 1
)"""
# an editor fills in decision (accept, reject) and note, and imports the file: `interlink decisions import`
PLAN_SQL = f"""
WITH {STANDING_SQL}
SELECT o.link_id, o.source_url, o.source_title, o.target_url, o.target_title, o.anchor_text, o.sentence,
       o.reason, o.evidence, o.placement, o.in_navigation, m.inlinks_before AS target_inlinks,
       o.target_depth_before, o.confidence, o.confidence_note, o.probability, o.score, o.similarity,
       o.target_cluster, o.priority, d.decision, d.note
FROM marts.link_opportunities o LEFT JOIN standing d USING (link_id)
LEFT JOIN graph.page_metrics m ON m.site = $1 AND m.page_id = o.target_page_id
WHERE o.site = $1 ORDER BY o.source_url, o.priority, o.target_url
"""
# the editor's work list, page by page: each link not rejected, with where it goes: in the sentence of the
# source's text that holds the anchor (at its character offset) — once, when several pages share that
# sentence (a template's snippet) —, in the page's related links, among the home page's sections, or in an
# index's list; its standing decision as its status, and decision and note blank to fill in (the import
# reads them over link_plan's)
TODO_SQL = f"""
WITH {STANDING_SQL},
site_pages AS (SELECT page_id, title FROM staging.pages WHERE site = $1),
todo AS (
    SELECT l.*, p.title AS source_title, d.decision, m.inlinks_before AS target_inlinks,
           count(*) OVER (PARTITION BY l.sentence, l.target_page_id) AS sharing
    FROM graph.link_plan l JOIN site_pages p ON p.page_id = l.source_page_id
    LEFT JOIN standing d USING (link_id)
    LEFT JOIN graph.page_metrics m ON m.site = $1 AND m.page_id = l.target_page_id
    WHERE l.site = $1 AND d.decision IS DISTINCT FROM 'reject'
)
SELECT source_title, source_url,
       row_number() OVER (PARTITION BY source_url ORDER BY anchor_offset NULLS LAST, target_url)
       || ' of ' || count(*) OVER (PARTITION BY source_url) AS step,
       anchor_text, target_url, anchor_offset, sentence,
       CASE WHEN sentence IS NOT NULL AND sharing > 1
                 THEN 'link the anchor in the snippet ' || sharing || ' pages share: edit the snippet once'
            WHEN placement = 'contextual' THEN 'link the anchor where it stands in the sentence'
            WHEN placement = 'related' THEN 'add it to the page''s related links, the anchor as its title'
            WHEN placement = 'home' THEN 'add it to the home page''s links to its sections'
            ELSE 'add it to the page''s list' END
       || CASE WHEN in_navigation THEN ' (the page links it in navigation only)' ELSE '' END AS how,
       target_inlinks, reason, confidence, confidence_note, probability, coalesce(decision, '') AS status,
       NULL::VARCHAR AS decision, NULL::VARCHAR AS note, link_id
FROM todo ORDER BY source_url, anchor_offset NULLS LAST, target_url
"""
# The site's pages in a CTE, joined by page id alone: joined on (site, page_id) twice, the pages' two copies
# share `site`, and on a lake (no distinct-count statistics) DuckDB joined them to each other on site first:
# every page with every page, 10^8 rows at 10,000 pages, out of memory at 1 GB.
PAIRS_SQL = """
WITH site_pages AS (SELECT page_id, url, title FROM staging.pages WHERE site = $1)
SELECT s.url AS page_url, s.title AS page_title, t.url AS similar_url, t.title AS similar_title,
       p.rank, p.score, p.relation, p.reciprocal
FROM ml.similarity_pairs p
JOIN site_pages s ON s.page_id = p.source_page_id
JOIN site_pages t ON t.page_id = p.target_page_id
WHERE p.site = $1 ORDER BY s.url, p.relation DESC, p.rank
"""
CLUSTERS_SQL = """
SELECT cluster_id, label, top_terms, size, cohesion, representative_url, hubs, orphans_before,
       mean_depth_before, mean_depth_after, planned_inlinks
FROM marts.cluster_summary WHERE site = ? ORDER BY size DESC, cluster_id
"""
CHANGES_SQL = """
SELECT change, why, source_url, target_url, reason, computed_at
FROM graph.link_plan_changes WHERE site = ? AND change <> 'kept' ORDER BY change, source_url, target_url
"""
# the links planned since the site's last decisions, newest first, to decide (the file imports as it is);
# none before any decision (the whole plan is new then)
NEW_SQL = f"""
WITH {STANDING_SQL},
reviewed AS (SELECT max(decided_at) AS at FROM standing)
SELECT l.planned_since, l.added_because, l.source_url, l.anchor_text, l.target_url, l.placement, l.reason,
       l.confidence, l.probability, coalesce(d.decision, '') AS status, NULL::VARCHAR AS decision,
       NULL::VARCHAR AS note, l.link_id
FROM graph.link_plan l CROSS JOIN reviewed LEFT JOIN standing d USING (link_id)
WHERE l.site = $1 AND l.planned_since > reviewed.at
ORDER BY l.planned_since DESC, l.source_url, l.target_url
"""
WAITING_SQL = (
    "SELECT coalesce(sum(waiting_for_review), 0)::BIGINT AS links FROM graph.site_metrics "
    "WHERE site = ? AND scenario = 'after'"
)
# the pages the plan left for an editor: the problem is the sentence's start (left_for_editor.py)
EDITOR_SQL = """
SELECT url, split_part(left_for_editor, ':', 1) AS problem, left_for_editor AS why
FROM graph.page_metrics WHERE site = ? AND left_for_editor IS NOT NULL ORDER BY problem, url
"""
# each spreadsheet (a CSV, and a sheet of the workbook) and its rows
SPREADSHEETS = {
    "link_plan": PLAN_SQL,
    "to_do": TODO_SQL,
    "similar_pages": PAIRS_SQL,
    "topics": CLUSTERS_SQL,
    "new_since_review": NEW_SQL,
    "changes_since_last_run": CHANGES_SQL,
    "for_an_editor": EDITOR_SQL,
}


LAST_BACKTEST = "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1"


def spreadsheet_tables(warehouse: str | Path, site: str, *, lock_timeout_s: float) -> dict[str, pl.DataFrame]:
    """The site's rows of each spreadsheet, by its name."""
    return {name: _site_rows(warehouse, site, lock_timeout_s, sql) for name, sql in SPREADSHEETS.items()}


def report_data(warehouse: str | Path, site: str, run_id: str, *, lock_timeout_s: float) -> ReportData:
    """Everything the site's HTML report draws (`run_id`: the run that writes it)."""
    rows = partial(_site_rows, warehouse, site, lock_timeout_s)
    from interlink_pipeline.core.ml.page_embeddings import read_vectors  # not for status: its figures only

    pages, vectors = read_vectors(warehouse, site, ("page_id",))
    figures = ", ".join(column for _, *columns in PAGE_FIGURES for column in columns)
    scorecard = (
        f"SELECT page_id, url, title, cluster, is_hub, {figures}, pagerank_before, pagerank_after "
        "FROM marts.page_scorecard WHERE site = ?"
    )
    return ReportData(
        site=site,
        run_id=run_id,
        pages=pages.join(rows(scorecard), on="page_id", how="left", maintain_order="left"),
        vectors=vectors,
        site_metrics=rows("SELECT * FROM graph.site_metrics WHERE site = ?"),
        plan=rows(
            "SELECT o.*, d.decision FROM marts.link_opportunities o LEFT JOIN marts.decisions d "
            "USING (site, link_id) WHERE o.site = ? ORDER BY o.link_key"
        ),
        backtest=rows(LAST_BACKTEST),
        changes=store.read_site(warehouse, "graph.link_plan_changes", site, lock_timeout_s=lock_timeout_s),
        new_since_review=rows(NEW_SQL),
        content_links=content_links(warehouse, site, lock_timeout_s=lock_timeout_s),
        decisions=rows("SELECT * FROM marts.decisions WHERE site = ?"),
        live=store.read_site(warehouse, "graph.live_links", site, lock_timeout_s=lock_timeout_s),
        adoption=rows("SELECT * FROM marts.adoption_by_week WHERE site = ? ORDER BY week"),
        left_for_editor=rows(f"SELECT count(*) AS pages FROM ({EDITOR_SQL})")["pages"][0],
    )


def decision_figures(
    warehouse: str | Path, site: str, *, lock_timeout_s: float, read_only: bool = False
) -> dict | None:
    """Editors' decisions as the plan stands: links accepted and rejected, and how many of the accepted
    ones are in the plan, live on the site, or not kept and why (accepted_outcomes' outcomes). None for a
    warehouse of an earlier version opened read-only (its decisions have no versions yet)."""
    read = partial(query, warehouse, params=[site], lock_timeout_s=lock_timeout_s, read_only=read_only)
    try:
        standing = read(sql=f"WITH {STANDING_SQL} SELECT * FROM standing")
    except duckdb.BinderException:  # no superseded_at: the next run's write adds it
        return None
    outcomes = accepted_outcomes(
        standing,
        read(sql="SELECT link_id FROM graph.link_plan WHERE site = ?"),
        read(sql="SELECT link_id FROM graph.live_links WHERE site = ?"),
        read(sql="SELECT page_id FROM staging.pages WHERE site = ?")["page_id"],
    )
    counts = outcomes.group_by("outcome").len().sort("len", "outcome", descending=[True, False])
    try:
        new = read(sql=f"SELECT count(*) AS links FROM ({NEW_SQL})")["links"][0]
        waiting = read(sql=WAITING_SQL)["links"][0]
    except duckdb.BinderException:  # a warehouse of an earlier version: its next plan adds the columns
        new = waiting = None
    return {
        "accepted": outcomes.height,
        "rejected": int((standing["decision"] == "reject").sum()),
        "accepted_outcomes": dict(counts.iter_rows()),
        "new_since_review": new,
        "waiting_for_review": waiting,
    }


def published_figures(
    warehouse: str | Path, site: str, *, lock_timeout_s: float, read_only: bool = False
) -> dict:
    """The plan's figures as a run publishes them (and `interlink status` shows them before the run has
    published): its measurement (plan_figures.measured_plan), editors' decisions and the pages left for
    an editor, as JSON values."""
    measured = measured_plan(warehouse, site, lock_timeout_s=lock_timeout_s, read_only=read_only)
    decisions = decision_figures(warehouse, site, lock_timeout_s=lock_timeout_s, read_only=read_only)
    try:
        left = query(
            warehouse,
            f"SELECT problem, count(*) AS pages FROM ({EDITOR_SQL}) GROUP BY problem ORDER BY problem",
            [site],
            lock_timeout_s=lock_timeout_s,
            read_only=read_only,
        )
    except duckdb.BinderException:  # a warehouse of an earlier version: its next plan adds the column
        left = None
    return {
        **measured,
        "decisions": decisions,
        "left_for_editor": dict(left.iter_rows()) if left is not None else None,
    }


def content_links(warehouse: str | Path, site: str, *, lock_timeout_s: float) -> pl.DataFrame:
    """The site's in-content links between its pages (source_page_id, target_page_id, anchor), read as the
    plan reads them (followed hyperlinks, by URL key; navigation links left out); the anchor is the first
    non-empty one the pair's links carry (null: none has one)."""
    from interlink_pipeline.core.urls import url_parts

    read = partial(store.read_site, warehouse, site=site, lock_timeout_s=lock_timeout_s)
    pages = read(table="staging.pages", columns=["page_id", "url_key"])
    links = read(
        table="raw.crawl_links",
        columns=["source_url", "target_url", "link_type", "follow", "link_position", "anchor"],
    )
    edges, _ = existing_links(links, pages["url_key"])
    keyed = pages.select("page_id", "url_key")
    anchors = (
        pl.DataFrame(
            {
                "source_key": url_parts(links["source_url"])["url_key"],
                "target_key": url_parts(links["target_url"])["url_key"],
                "anchor": links["anchor"].str.strip_chars(),
            }
        )
        .filter(pl.col("anchor") != "")
        .unique(["source_key", "target_key"], keep="first", maintain_order=True)
        .join(keyed.rename({"page_id": "source_page_id", "url_key": "source_key"}), on="source_key")
        .join(keyed.rename({"page_id": "target_page_id", "url_key": "target_key"}), on="target_key")
        .select("source_page_id", "target_page_id", "anchor")
    )
    return content_page_pairs(edges, pages["page_id"]).join(
        anchors, on=["source_page_id", "target_page_id"], how="left", maintain_order="left"
    )


def _site_rows(warehouse: str | Path, site: str, lock_timeout_s: float, sql: str) -> pl.DataFrame:
    """The rows of `sql`, whose one parameter is the site."""
    return query(warehouse, sql, [site], lock_timeout_s=lock_timeout_s)
