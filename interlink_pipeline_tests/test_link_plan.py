"""The link plan: its rules on small controlled graphs, its metrics, the asset on real and generated data."""

import dataclasses
import json

import dagster as dg
import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from interlink_pipeline.core.graph.anchors import (
    Anchored,
    AnchorRules,
    anchor_rules,
    choose_anchors,
    target_names,
    url_like,
)
from interlink_pipeline.core.graph.centrality import betweenness, centrality
from interlink_pipeline.core.graph.decided_links import (
    accepted_outcomes,
    decided_links,
    sketch_similarity,
    text_sketch,
)
from interlink_pipeline.core.graph.metrics import (
    UNREACHABLE,
    adjacency,
    click_depth,
    gini,
    pagerank,
    summarize,
)
from interlink_pipeline.core.graph.plan_invariants import PLAN_INVARIANTS, accepted_kept, check_plan
from interlink_pipeline.core.graph.plan_metrics import SUMMARY_ROWS, before_and_after, comparison
from interlink_pipeline.core.graph.plan_options import UTILITY_PAGES, PlanOptions, pages_matching
from interlink_pipeline.core.graph.plan_stability import plan_changes
from interlink_pipeline.core.graph.plan_state import SiteGraph
from interlink_pipeline.core.graph.planner import Planner, plan_links, weak_topics
from interlink_pipeline.core.graph.sentences import first_placed, heading_lead, placed_mention
from interlink_pipeline.core.graph.structure import near_duplicate_orphans
from interlink_pipeline.core.ingest.inbox import register_crawl
from interlink_pipeline.core.ingest.site_links import existing_links, links_from_crawl_counts
from interlink_pipeline.core.ingest.site_sections import SiteSections
from interlink_pipeline.core.ml.ann_search import Approximate
from interlink_pipeline.core.numbers import significant
from interlink_pipeline.core.publish.plan_table import plan_in_words
from interlink_pipeline.core.relevance.url_tree import UrlTree
from interlink_pipeline.core.sorted_sets import shared_count, sorted_unique
from interlink_pipeline.core.text import function_words
from interlink_pipeline.core.warehouse.database import connect
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    LIGHT,
    NUTRI,
    PROJECT_ROOT,
    SAMPLE_DIR,
    UP_TO_PLAN,
    failure_message,
    materialization_metadata,
    run_site,
)

EMPTY_EDGES = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "content": pl.Boolean})
EMPTY_PAIRS = pl.DataFrame(schema={"a": pl.Int64, "b": pl.Int64, "score": pl.Float32})
EMPTY_CANDIDATES = pl.DataFrame(
    schema={"source": pl.Int64, "target": pl.Int64, "score": pl.Float32, "provenance": pl.String}
)


def _site(n, similar=(), existing=(), candidates=(), vectors=None, clusters=None, sections=None, related=()):
    """A site of n pages; `related` (a, b, score): pages whose texts are near, both ways among the candidates
    (evidence that they are about the same thing) as well as among the similar pairs."""
    similar = [*similar, *related]
    candidates = [*candidates, *((b, a, s, "similar") for a, b, s in related),
                  *((a, b, s, "similar") for a, b, s in related)]  # fmt: skip
    pairs = pl.DataFrame(
        [(a, b, s) for a, b, s in similar] + [(b, a, s) for a, b, s in similar],
        schema={"a": pl.Int64, "b": pl.Int64, "score": pl.Float32},
        orient="row",
    )
    edges = (
        pl.DataFrame(
            list(existing),
            schema={"source": pl.Int64, "target": pl.Int64, "content": pl.Boolean},
            orient="row",
        )
        if existing
        else EMPTY_EDGES
    )
    cands = (
        pl.DataFrame(list(candidates), schema=EMPTY_CANDIDATES.schema, orient="row")
        if candidates
        else (EMPTY_CANDIDATES)
    )
    return SiteGraph(
        np.array([f"{i:016x}" for i in range(n)]),
        0,
        np.asarray(clusters if clusters is not None else [-1] * n),
        cands,
        pairs if similar else EMPTY_PAIRS,
        edges,
        vectors=vectors,
        sections=sections or SiteSections.empty(),
    )


def _anchored(anchors: list[str | None]) -> Anchored:
    """Anchors placed in the text, each in a sentence of its own (None: not placed)."""
    return Anchored(
        list(anchors),
        [0 if a else None for a in anchors],
        [f"We read {a} in this sentence." if a else None for a in anchors],
        ["contextual" if a else "related" for a in anchors],
    )


def _links(frame):
    return {(s, t): r for s, t, r in frame.select("source", "target", "reason").iter_rows()}


def test_an_orphan_is_rescued_by_its_most_related_page_with_budget():
    # page 3 is an orphan; page 1 is most similar but has no budget left (2 existing content links)
    existing = [(0, 1, False), (0, 2, False), (1, 2, True), (1, 0, True), (2, 1, True)]
    site = _site(4, related=[(3, 1, 0.9), (3, 2, 0.8)], existing=existing)
    planned, planner = plan_links(site, PlanOptions(out_link_budget=2, hub_links=0, max_inlinks=1))
    assert _links(planned)[(2, 3)] == "orphan-rescue"
    assert (1, 3) not in _links(planned)
    assert planner.out_budget[1] == 0 and planner.stats.unresolved_orphans == []


def test_an_accepted_link_is_placed_whatever_its_score_and_a_rejected_one_never():
    """Page 3 is an orphan whose most related page (1) an editor refused as its source: the rescue comes from
    page 2. The editor accepted 2 -> 1, which no signal proposes any more: it is planned first all the same,
    and the rejected topical pair 1 -> 2 (the best candidate) is not."""
    existing = [(0, 1, True), (0, 2, True)]
    candidates = [(1, 2, 0.9, "similar"), (2, 0, 0.8, "similar")]
    site = _site(4, related=[(3, 1, 0.9), (3, 2, 0.8)], existing=existing, candidates=candidates)
    accepted = pl.DataFrame(
        [(2, 1, "topical", 0.4, "similar", "contextual", [])],
        schema=["source", "target", "reason", "score", "evidence", "placement", "alternatives"],
        orient="row",
    ).with_columns(pl.col("score").cast(pl.Float32), pl.col("alternatives").cast(pl.List(pl.Int64)))
    site = dataclasses.replace(site, accepted=accepted, rejected=frozenset({(1, 3), (1, 2)}))
    planned, planner = plan_links(site, PlanOptions(hub_links=0, min_probability=0.5))
    links = _links(planned)
    assert planned.row(0)[:3] == (2, 1, "topical")  # the accepted link, first
    assert links[(2, 3)] == "orphan-rescue" and (1, 3) not in links
    assert (1, 2) not in links and links[(2, 0)] == "topical"
    assert planner.stats.unresolved_orphans == []


def _planned(rows: list[tuple]) -> pl.DataFrame:
    """Links to keep or accepted ones, as the planner takes them (page indices)."""
    return pl.DataFrame(
        rows,
        schema=["source", "target", "reason", "score", "evidence", "placement", "alternatives"],
        orient="row",
    ).with_columns(pl.col("score").cast(pl.Float32), pl.col("alternatives").cast(pl.List(pl.Int64)))


def test_accepted_links_are_kept_past_a_pages_budget_and_use_up_its_room():
    """Page 1 has a budget of 3 with one in-content link already; its editor accepted four more (one on an
    index's list it no longer heads, one a hub link on a full home page): all are planned, nothing else is
    added on page 1, and the budget check counts them as allowed."""
    existing = [(0, 1, True), (1, 2, True)]
    candidates = [(1, 3, 0.9, "similar"), (1, 4, 0.9, "similar"), (2, 5, 0.8, "similar")]
    site = _site(7, related=[(5, 2, 0.9), (6, 2, 0.8)], existing=existing, candidates=candidates)
    accepted = _planned(
        [(1, 3, "topical", 0.2, "accepted", "contextual", []),
         (1, 4, "topical", 0.2, "accepted", "listing", []),
         (1, 5, "topical", 0.2, "accepted", "contextual", []),
         (1, 6, "orphan-rescue", 0.0, "accepted", "contextual", []),
         (0, 2, "hub", 0.5, "centrality", "home", [])]
    )  # fmt: skip
    site = dataclasses.replace(site, accepted=accepted)
    options = PlanOptions(out_link_budget=3, hub_links=1, min_probability=0.5)
    planned, planner = plan_links(site, options)
    links = _links(planned)
    assert {pair for pair in links if pair[0] == 1} == {(1, 3), (1, 4), (1, 5), (1, 6)}
    assert (0, 2) in links and planner.out_budget[1] == 0 and planner.hub_budget == 0
    checks = {
        c.name: c
        for c in check_plan(planned, _anchored([None] * planned.height), site.existing, planner, 0, options)
    }
    budget = checks["link_plan_within_budget"]
    assert budget.passed and budget.figures["pages_past_budget_by_accepted_links"] == 1
    # links of the last plan (not accepted) still wait for room (a listing link too, its page no index),
    # and are kept only while they have evidence their pages are about the same thing: 1 -> 5 and 1 -> 6
    # no longer do (no signal proposes them), and 1 -> 4 comes back as a topical link in page 1's text
    kept = dataclasses.replace(site, accepted=None, kept=accepted)
    planned, planner = plan_links(kept, options)
    assert {pair for pair in _links(planned) if pair[0] == 1} == {(1, 3), (1, 4)}
    unrelated = "no longer related: no evidence both pages are about the same thing"
    assert planner.refused[(1, 5)] == planner.refused[(1, 6)] == unrelated


def test_every_accepted_link_is_kept_or_said_why_not():
    """What became of four accepted links: in the plan, live on the site, its target page gone (the last
    plan had it: removed), its source page gone (in neither plan: not kept); the changes say why."""
    ids = [f"{i:016x}" for i in range(6)]
    standing = pl.DataFrame(
        {"link_id": ["in", "live", "target", "source"],
         "source_page_id": [ids[0], ids[1], ids[2], "gone-src"],
         "target_page_id": [ids[3], ids[4], "gone-tgt", ids[5]], "decision": ["accept"] * 4,
         "reason": ["topical", None, "topical", "hub"]}
    ).with_columns(
        source_url=pl.col("source_page_id").map_elements(lambda p: f"/{p}/", return_dtype=pl.String),
        target_url=pl.col("target_page_id").map_elements(lambda p: f"/{p}/", return_dtype=pl.String),
        decided_at=pl.datetime(2026, 11, 1) + pl.duration(days=pl.int_range(4)),
    )  # fmt: skip
    plan = standing.filter(pl.col("link_id") == "in").select(
        "link_id", "source_page_id", "target_page_id", "source_url", "target_url", "reason",
        pl.lit("in the site's first plan").alias("added_because"),
    )  # fmt: skip
    outcomes = accepted_outcomes(standing, plan, pl.DataFrame({"link_id": ["live"]}), pl.Series(ids))
    assert dict(zip(outcomes["link_id"], outcomes["outcome"], strict=True)) == {
        "in": "in the plan", "live": "live on the site",
        "target": "not kept: its target page is gone from the crawl",
        "source": "not kept: its source page is gone from the crawl",
    }  # fmt: skip
    assert accepted_kept(outcomes).passed
    previous = pl.concat(
        [plan, standing.filter(pl.col("link_id") == "target").select(plan.drop("added_because").columns)],
        how="diagonal",
    )
    dropped = pl.DataFrame(
        schema={"source_page_id": pl.String, "target_page_id": pl.String, "why": pl.String}
    )
    not_kept = outcomes.filter(pl.col("outcome").str.starts_with("not kept"))
    changes = plan_changes(previous, plan, dropped, not_kept)
    assert changes.select("source_page_id", "change", "why", "reason").rows() == [
        (ids[0], "kept", "still valid", "topical"),
        ("gone-src", "not kept", "accepted by an editor, not kept: its source page is gone from the crawl",
         "hub"),
        (ids[2], "removed", "accepted by an editor, not kept: its target page is gone from the crawl",
         "topical"),
    ]  # fmt: skip


def test_a_rejected_link_comes_back_only_when_a_page_was_rewritten():
    """The text sketch kept with a decision: an edited sentence keeps a long page's link refused, a page
    rewritten past rejected_returns_below lets it be planned again."""
    words = [f"w{i}" for i in range(400)]
    page = " ".join(words)
    edited = " ".join([*words[:200], "changed", *words[201:]])
    rewritten = " ".join(words[:100] + [f"new{i}" for i in range(300)])
    assert sketch_similarity(text_sketch(page), text_sketch(page)) == 1.0
    assert sketch_similarity(text_sketch(page), text_sketch(edited)) > 0.9
    assert sketch_similarity(text_sketch(page), text_sketch(rewritten)) < 0.5
    pages = pl.DataFrame(
        {"page_id": ["a" * 16, "b" * 16, "c" * 16], "title": ["A", "B", "C"], "h1": [None] * 3,
         "meta_description": [None] * 3, "body_text": [edited, rewritten, page]}
    )  # fmt: skip
    decided_on = {"a" * 16: text_sketch("A " + page), "b" * 16: text_sketch("B " + page)}
    standing = pl.DataFrame(
        {"source_page_id": ["a" * 16, "b" * 16], "target_page_id": ["c" * 16, "c" * 16],
         "decision": ["reject", "reject"], "reason": ["topical", "topical"]}
    ).with_columns(
        pl.col("source_page_id")
        .replace_strict(decided_on, return_dtype=pl.List(pl.Int64))
        .alias("source_sketch"),
        pl.lit(text_sketch("C " + page), dtype=pl.List(pl.Int64)).alias("target_sketch"),
    )  # fmt: skip
    index = pages.select("page_id", pl.int_range(3, dtype=pl.Int64).alias("i"))
    previous = pl.DataFrame(
        schema={"source_page_id": pl.String, "target_page_id": pl.String, "reason": pl.String,
                "score": pl.Float32, "evidence": pl.String, "placement": pl.String,
                "alternatives": pl.List(pl.Int64)}
    )  # fmt: skip
    decided = decided_links(standing, pages, index, previous, PlanOptions().rejected_returns_below)
    assert decided.rejected == frozenset({(0, 2)})
    assert decided.returned["source_page_id"].to_list() == ["b" * 16]
    assert decided.returned["text_kept"][0] < 0.5
    never = decided_links(standing, pages, index, previous, 0.0)
    assert never.rejected == frozenset({(0, 2), (1, 2)}) and never.returned.is_empty()


def test_without_a_links_export_the_crawl_counts_make_the_before_and_only_true_orphans_are_rescued():
    # home; pages at crawl depths 1, 2 and 5; page 4 has no in-links in the crawl (a sitemap found it);
    # page 5 has in-links but no depth (placed at the deepest known level)
    depth = pl.Series([0, 1, 2, 5, None, None], dtype=pl.Int32)
    inlinks = pl.Series([3, 2, 1, 1, 0, 4], dtype=pl.Int32)
    edges, nodes, counted = links_from_crawl_counts(depth, inlinks, home=0)
    assert not edges["content"].any() and nodes == 6 + 4  # pass-through levels 1..4
    assert click_depth(adjacency(nodes, edges["source"], edges["target"]), 0)[:6].tolist() == [
        0, 1, 2, 5, UNREACHABLE, 5
    ]  # fmt: skip
    assert counted.tolist() == [3, 2, 1, 1, 0, 4]
    everything_related = [(a, b, 0.5) for a in range(6) for b in range(a + 1, 6)]
    site = _site(6, related=everything_related)
    site = dataclasses.replace(site, existing=edges, nodes=nodes, counted_inlinks=counted)
    planned, planner = plan_links(site, PlanOptions(max_depth=3, hub_links=0))
    structural = planned.filter(pl.col("reason") != "topical")
    assert dict(zip(structural["target"], structural["reason"], strict=True)) == {
        4: "orphan-rescue", 3: "depth-shortcut", 5: "depth-shortcut"
    }  # fmt: skip
    before, after = before_and_after(planner)
    assert (before.summary.orphan_pages, before.summary.max_depth, before.summary.links) == (1, 5, 11)
    assert after.summary.orphan_pages == 0 and after.summary.max_depth <= 3
    assert after.summary.links == 11 + planned.height
    assert (before.inlinks[[3, 4]] == [1, 0]).all() and (after.inlinks >= before.inlinks).all()
    # nothing known of where the existing links sit: no page's out-link budget is spent on them
    assert (planned.group_by("source").len()["len"] <= PlanOptions().out_link_budget).all()
    # neither column: the links are unknown, as before
    assert links_from_crawl_counts(pl.Series([None] * 3), pl.Series([None] * 3), 0)[2] is None


def test_an_orphan_joins_the_list_of_the_index_likely_to_list_it_whatever_its_budget():
    # page 1 lists 2..4 (a paginated listing's first page) and has no budget left; page 5 is an orphan it
    # is the most likely to list; page 6 an orphan only page 2 (with budget) is somewhat like
    existing = [(0, 1, False), (1, 2, True), (1, 3, True), (1, 4, True), (0, 2, False), (0, 3, False),
                (0, 4, False)]  # fmt: skip
    sections = SiteSections(
        parent=np.empty(0, dtype=np.int64), child=np.empty(0, dtype=np.int64),
        main_sections=np.empty(0, dtype=np.int64), listings=np.array([1]),
    )  # fmt: skip
    candidates = [(1, 5, 0.6, "listing"), (2, 5, 0.2, "similar"), (1, 6, 0.05, "similar"),
                  (2, 6, 0.04, "similar")]  # fmt: skip
    site = _site(7, existing=existing, candidates=candidates, sections=sections)
    options = PlanOptions(out_link_budget=3, section_links=3, hub_links=0, max_inlinks=1)
    planned, planner = plan_links(site, options)
    rescues: dict[int, list[dict]] = {}
    for row in planned.filter(pl.col("reason") == "orphan-rescue").iter_rows(named=True):
        rescues.setdefault(row["target"], []).append(row)
    assert (rescues[5][0]["source"], rescues[5][0]["placement"]) == (1, "listing")
    assert rescues[5][0]["alternatives"] == [2]
    # its next likely source gives it a second link
    assert (rescues[5][1]["source"], rescues[5][1]["placement"]) == (2, "contextual")
    # page 6 has no likely source: it is not linked from wherever there is room, but left for an editor,
    # with its candidate sources and why each was passed over
    assert 6 not in rescues
    task = planner.left_for_editor[6]
    assert task.problem == "orphan" and [p for p, _, _ in task.passed_over] == [1, 2]
    urls = [f"/p{i}/" for i in range(7)]
    assert task.sentence(urls) == (
        "orphan: no related page could link it; passed over: /p1/ (5%: under the plan's floor of 10%); "
        "/p2/ (4%: under the plan's floor of 10%)"
    )
    anchors = [f"anchor {i}" for i in range(planned.height)]
    checks = {c.name: c for c in check_plan(planned, _anchored(anchors), site.existing, planner, 1, options)}
    assert checks["link_plan_within_budget"].passed and checks["link_plan_links_related"].passed
    assert checks["link_plan_no_orphans"].figures["orphans_left_for_editor"] == 1


def test_an_orphan_section_index_is_linked_before_its_orphan_pages_which_join_its_list():
    # /guides/ (3) lists guides 4..8 and nobody links it; guides 9 and 10 are orphans too. Every candidate
    # is unlikely: a boots category is no place for the guides' index (1e-5), but the index is their own
    # section's, and the home page is its own
    paths = ["/", "/c/boots/", "/c/tents/", "/guides/", *(f"/guides/g{i}/" for i in range(4, 11))]
    existing = [(0, 1, True), (0, 2, True), *((3, g, True) for g in range(4, 9))]
    candidates = [(1, 3, 1e-5, "similar"), (3, 9, 3e-6, "listing"), (1, 9, 2e-6, "similar"),
                  (3, 10, 3e-6, "listing"), (1, 10, 2e-6, "similar")]  # fmt: skip
    site = _site(11, existing=existing, candidates=candidates)
    site.tree = UrlTree(paths)

    def rescues(options: PlanOptions) -> tuple[dict, Planner]:
        planned, planner = plan_links(site, options)
        placed = planned.select("source", "target", "placement")
        return {t: (s, p) for s, t, p in placed.iter_rows()}, planner

    # the home page has room for one more link: the index goes there, then its guides in its list
    placed, _ = rescues(PlanOptions(out_link_budget=3, hub_links=3, max_inlinks=1, max_depth=4))
    assert placed[3] == (0, "home") and placed[9] == placed[10] == (3, "listing")
    # it has none: the index is left for an editor, never hung on the boots category
    placed, planner = rescues(PlanOptions(out_link_budget=3, hub_links=2, max_inlinks=1, max_depth=4))
    assert 3 not in placed and planner.left_for_editor[3].problem == "orphan"
    assert [(p, why) for p, _, why in planner.left_for_editor[3].passed_over] == [
        (1, "under the plan's floor of 10%")
    ]


def test_an_orphan_only_the_full_home_page_is_likely_to_link_is_left_for_an_editor_saying_so():
    # the home page links its two sections and has no room left; page 3, no section's index, is an orphan
    # only the home page is likely to link (97%): its list takes only its own sections' indexes
    existing = [(0, 1, True), (0, 2, True), (1, 2, True), (2, 1, True)]
    candidates = [(0, 3, 0.97, "similar"), (1, 3, 0.03, "similar")]
    site = _site(4, existing=existing, candidates=candidates)
    site.tree = UrlTree(["/", "/a/", "/b/", "/c/"])
    planned, planner = plan_links(site, PlanOptions(out_link_budget=2, hub_links=2, max_inlinks=1))
    assert 3 not in planned["target"].to_list() and planner.left_for_editor[3].problem == "orphan"
    assert [(p, why) for p, _, why in planner.left_for_editor[3].passed_over] == [
        (0, "the home page, full: past its hub links it lists only its own sections' indexes"),
        (1, "under the plan's floor of 10%"),
    ]


def test_existing_links_are_never_suggested_and_budgets_hold():
    existing = [(0, i, False) for i in range(1, 6)] + [(1, 2, True)]
    candidates = [
        (s, t, 0.9 - 0.01 * (s + t), "semantic") for s in range(1, 6) for t in range(1, 6) if s != t
    ]
    site = _site(6, existing=existing, candidates=candidates)
    planned, _ = plan_links(site, PlanOptions(out_link_budget=2, hub_links=0, max_inlinks=10))
    links = _links(planned)
    assert (1, 2) not in links  # already there
    per_source = planned.group_by("source").len()
    content = {1: 1}
    assert all(count + content.get(source, 0) <= 2 for source, count in per_source.iter_rows())


def test_the_home_page_links_the_sections_it_misses_never_a_leaf():
    # /a/ and /b/ head sections of 6 pages each, the home page links /a/ only; 15 is a central leaf page
    paths = ["/", "/a/", "/b/", *(f"/a/{i}/" for i in range(6)), *(f"/b/{i}/" for i in range(6)), "/leaf/"]
    candidates = [(15, t, 0.9, "similar") for t in range(1, 15)] + [
        (t, 15, 0.9, "similar") for t in range(1, 15)
    ]
    site = _site(16, candidates=candidates, existing=[(0, 1, False), *((1, t, False) for t in range(3, 9))])
    site.tree = UrlTree(paths)
    planned, planner = plan_links(site, PlanOptions(hub_links=5, out_link_budget=5))
    hubs = planned.filter(pl.col("reason") == "hub")
    assert hubs["target"].to_list() == [2] and set(hubs["placement"]) == {"home"}
    assert planner.hubs == [2]  # never the central leaf 15, and not /a/, which the home page links
    # the home page that links every section, and reaches their pages, gets no hub link
    site.existing = pl.concat(
        [site.existing, pl.DataFrame({"source": [0], "target": [2], "content": [True]})]
    )
    planned, planner = plan_links(site, PlanOptions(hub_links=5, out_link_budget=5))
    assert planner.hubs == [] and planned.filter(pl.col("reason") == "hub").is_empty()


def test_the_home_page_links_the_section_whose_pages_are_too_deep():
    # a chain home → 1 → 2 → 3 (a listing of 4..11) puts 4..11 at depth 4; with max_depth 3 the home page
    # links the listing that holds them rather than eight depth shortcuts
    existing = [(0, 1, False), (1, 2, False), (2, 3, False), *((3, t, True) for t in range(4, 12))]
    site = _site(12, existing=existing)
    planned, planner = plan_links(site, PlanOptions(hub_links=3, out_link_budget=5, max_depth=3))
    assert planner.hubs == [3] and _links(planned) == {(0, 3): "hub"}
    assert planner.stats.too_deep_after == 0


def test_a_list_of_too_deep_pages_is_linked_from_the_index_above_it_not_each_page_from_a_sibling():
    # home → 1 (an index) → 2 (a range index) → 3 (a list of 4..11) puts 4..11 at depth 4; the home page
    # has no room for hubs, so with max_depth 3 the index 1 lists 3 (a level skipped in the site's own
    # hierarchy) — one link, where shortcuts from siblings would take eight; page 12, unrelated and with
    # budget, is not the source
    existing = [
        (0, 1, True),
        (1, 2, True),
        (2, 3, True),
        (0, 12, True),
        *((3, t, True) for t in range(4, 12)),
    ]
    similar = [(12, t, 0.95) for t in range(3, 12)]
    index = np.array([1])  # page 1 is an index (the first page of a listing)
    empty = np.empty(0, dtype=np.int64)
    sections = SiteSections(parent=empty, child=empty, main_sections=empty, listings=index)
    site = _site(13, similar=similar, existing=existing, sections=sections)
    planned, planner = plan_links(site, PlanOptions(hub_links=0, out_link_budget=2, max_depth=3))
    assert _links(planned.filter(pl.col("reason") != "topical")) == {(1, 3): "depth-shortcut"}
    assert planner.stats.too_deep_after == 0


def test_an_index_lists_a_too_deep_page_only_when_it_is_like_the_pages_its_list_holds():
    # home → 1 (an index listing the overviews 2, 13, 14) → 2 → 3 (a list of 4..11, at depth 4); with
    # max_depth 3 the index above 3 is 1. Where 3 is one more overview (its vector like 2, 13 and 14's),
    # 1 lists it; where 3 is of another kind (a control's member functions among the controls), it does not
    existing = [(0, 1, True), (1, 2, True), (1, 13, True), (1, 14, True), (2, 3, True),
                *((3, t, True) for t in range(4, 12))]  # fmt: skip
    sections = SiteSections(*(np.empty(0, dtype=np.int64),) * 3, listings=np.array([1]))
    overviews = np.array([[1.0, 0.0], [0.9, 0.436], [0.95, 0.312]], dtype=np.float32)

    def shortcuts(kind: list[float]) -> dict:
        vectors = np.zeros((15, 2), dtype=np.float32)
        vectors[[2, 13, 14]], vectors[3], vectors[4:12] = overviews, kind, [0.0, 1.0]
        site = _site(15, existing=existing, sections=sections, vectors=vectors)
        planned, _ = plan_links(site, PlanOptions(hub_links=0, out_link_budget=2, max_depth=3))
        return _links(planned.filter(pl.col("reason") != "topical"))

    assert shortcuts([0.97, 0.243]) == {(1, 3): "depth-shortcut"}
    assert (1, 3) not in shortcuts([0.0, 1.0])


def test_near_duplicate_orphans_are_not_rescued_side_by_side_the_pair_is_named():
    # orphans 3 and 4 say the same (cosine 0.99), 5 another thing: 3 and 5 are rescued, 4 is named as 3's
    # possible cannibal and left for an editor to merge or redirect; the orphan check still passes
    vectors = np.array(
        [[1, 0, 0], [0.8, 0.6, 0], [0.8, 0, 0.6], [0, 1, 0], [0, 0.99, 0.141], [0, 0, 1]], dtype=np.float32
    )
    related = [(3, 1, 0.8), (5, 2, 0.8)]
    site = _site(6, existing=[(0, 1, True), (0, 2, True)], vectors=vectors, related=related)
    planned, planner = plan_links(site, PlanOptions(hub_links=0))
    rescued = set(planned.filter(pl.col("reason") == "orphan-rescue")["target"])
    assert 3 in rescued and 5 in rescued and 4 not in rescued
    assert planner.duplicate_of.tolist() == [-1, -1, -1, -1, 3, -1]
    assert planner.stats.near_duplicate_search == "3 orphans, exact"
    # past a size the search is approximate where its recall holds, exact (and said) where it does not
    for search, said in (
        (Approximate(1), "ann:HNSW"),
        (Approximate(1, recall_floor=1.01), "searched exactly"),
    ):
        planner.duplicate_of[:] = -1
        near_duplicate_orphans(planner, search)
        assert planner.duplicate_of.tolist() == [-1, -1, -1, -1, 3, -1]
        assert said in planner.stats.near_duplicate_search, planner.stats.near_duplicate_search
    assert planner.stats.unreachable_after == 0
    anchors = _anchored([None] * planned.height)
    checks = {c.name: c for c in check_plan(planned, anchors, site.existing, planner, 1, PlanOptions())}
    check = checks["link_plan_no_orphans"]
    assert check.passed and check.figures["near_duplicates_left_unlinked"] == 1
    assert check.figures["near_duplicates"] == [f"{4:016x} says what {3:016x} says"]


def test_utility_pages_never_take_a_link_and_a_rescued_orphan_gets_a_second_likely_source():
    # page 4 is an orphan; 1 (about us) is its most probable source, 2 and 3 the next ones
    existing = [(0, 1, False), (0, 2, False), (0, 3, False)]
    candidates = [(1, 4, 0.9, "similar"), (2, 4, 0.8, "similar"), (3, 4, 0.25, "similar")]
    site = _site(5, existing=existing, candidates=candidates)
    site.utility = pages_matching(
        pl.Series(["/", "/about-us/", "/guides/a/", "/guides/b/", "/guides/c/"]), UTILITY_PAGES
    )
    planned, _ = plan_links(site, PlanOptions(hub_links=0, min_inlinks=0, max_inlinks=0))
    assert _links(planned) == {(2, 4): "orphan-rescue", (3, 4): "orphan-rescue"}
    # the second comes from a likely source only: none under min_probability
    planned, _ = plan_links(site, PlanOptions(hub_links=0, min_inlinks=0, max_inlinks=0, min_probability=0.6))
    assert _links(planned) == {(2, 4): "orphan-rescue"}
    # nor a link's target: a guide never links the contact form, and the WordPress sample page, an orphan,
    # is left to the site's menus (the orphan check counts it apart)
    paths = ["/", "/guides/a/", "/guides/b/", "/client-form/", "/sample-page/"]
    site = _site(5, existing=[(0, 1, True), (0, 2, True), (0, 3, False)], candidates=[(1, 3, 0.9, "similar")])
    site.utility = pages_matching(pl.Series(paths), UTILITY_PAGES)
    planned, planner = plan_links(site, PlanOptions(hub_links=0))
    assert planned.is_empty() and planner.stats.unreachable_after == 0
    checks = {c.name: c for c in check_plan(planned, _anchored([]), site.existing, planner, 1, PlanOptions())}
    assert checks["link_plan_no_orphans"].passed
    assert checks["link_plan_no_orphans"].figures["utility_pages_left_unlinked"] == 1
    with pytest.raises(Exception, match=r"utility_pages is not a regular expression \(missing \)"):
        plan_links(site, PlanOptions(utility_pages="/(about"))


def test_a_topic_linked_under_the_sites_median_gets_a_contested_budget_first():
    """Page 1 has room for one link; its best candidate is a page of a well-linked topic (2, 3, 5: three
    in-links each), its second a page of a topic linked under the site's median (4: one). The weak topic
    takes the link; without topics, the best candidate does."""
    links = [(0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (2, 3), (3, 2), (5, 2), (5, 3), (2, 5), (3, 5)]
    existing = [(a, b, False) for a, b in links]
    candidates = [(1, 2, 0.9, "similar"), (1, 4, 0.5, "similar")]
    options = PlanOptions(hub_links=0, out_link_budget=1, min_inlinks=1, max_inlinks=1)
    topics = [0, 1, 2, 2, 3, 2]
    site = _site(6, existing=existing, candidates=candidates, clusters=topics)
    inlinks = np.bincount([b for _, b in links], minlength=6)
    assert weak_topics(inlinks, np.asarray(topics)).tolist() == [True, True, False, False, True, False]
    assert _links(plan_links(site, options)[0]) == {(1, 4): "topical"}
    untopical = _site(6, existing=existing, candidates=candidates)
    assert _links(plan_links(untopical, options)[0]) == {(1, 2): "topical"}


def test_a_generators_pages_are_never_a_links_source_but_still_take_links():
    """A command reference the docs generator writes: a link added to one of its pages is lost at the next
    build, so the plan links from the hand-written guides only; the reference pages still take links, and
    a link an editor accepted from one stands (the editor will put it in the generator's source)."""
    paths = ["/", "/guides/a/", "/guides/b/", "/commands/build/", "/commands/serve/"]
    candidates = [
        (3, 4, 0.9, "similar"),
        (4, 3, 0.9, "similar"),
        (1, 3, 0.8, "similar"),
        (2, 1, 0.7, "similar"),
    ]
    existing = [(0, 1, True), (0, 2, True), (0, 3, True), (0, 4, True)]
    site = _site(5, existing=existing, candidates=candidates)
    options = PlanOptions(hub_links=0, min_inlinks=1, max_inlinks=2, generated_pages="^/commands/")
    site.generated = pages_matching(pl.Series(paths), options.generated_pages)
    planned, _ = plan_links(site, options)
    assert planned.height and not set(planned["source"].to_list()) & {3, 4}
    assert 3 in planned["target"].to_list()  # a reference page still takes a link
    unmarked, _ = plan_links(dataclasses.replace(site, generated=None), options)
    assert {3, 4} & set(unmarked["source"].to_list())  # without the setting, they were sources
    accepted = pl.DataFrame(
        [(4, 3, "topical", 0.9, "similar", "contextual", [])],
        schema=["source", "target", "reason", "score", "evidence", "placement", "alternatives"],
        orient="row",
    ).with_columns(pl.col("score").cast(pl.Float32), pl.col("alternatives").cast(pl.List(pl.Int64)))
    planned, _ = plan_links(dataclasses.replace(site, accepted=accepted), options)
    assert _links(planned)[(4, 3)] == "topical"
    with pytest.raises(Exception, match=r"generated_pages is not a regular expression"):
        plan_links(site, PlanOptions(generated_pages="/(commands"))


def test_the_least_linked_pages_and_those_in_striking_distance_take_likely_links_from_a_lower_bar():
    # page 1 has the home page's link alone; 2..7 link each other
    existing = [(0, t, False) for t in range(1, 8)] + [
        (s, t, False) for s in range(2, 8) for t in range(2, 8) if s != t
    ]
    candidates = [(2, 1, 0.07, "similar"), (3, 4, 0.07, "similar")]
    site = _site(8, existing=existing, candidates=candidates)
    planned, _ = plan_links(site, PlanOptions(hub_links=0))
    assert _links(planned) == {(2, 1): "topical"}
    # known by the crawl's in-link counts alone, they are not: the bar stays min_probability
    site.counted_inlinks = np.ones(8)
    planned, _ = plan_links(site, PlanOptions(hub_links=0))
    assert _links(planned) == {}
    # a page in striking distance (Search Console) is, whatever its links: page 4 takes its likely link
    site.priority = np.arange(8) == 4
    planned, _ = plan_links(site, PlanOptions(hub_links=0))
    assert _links(planned) == {(3, 4): "topical"}


def test_a_topical_link_needs_more_than_the_sites_linking_habits():
    # 2 -> 3 is proposed by the link graph alone (pages linked alike), 4 -> 5 by the graph and the texts
    existing = [(0, t, False) for t in range(1, 6)]
    candidates = [(2, 3, 0.9, "graph+listing"), (4, 5, 0.6, "graph+similar")]
    planned, _ = plan_links(_site(6, existing=existing, candidates=candidates), PlanOptions(hub_links=0))
    assert _links(planned) == {(4, 5): "topical"}


def test_no_page_takes_more_than_its_share_of_the_topical_links():
    # every page may link page 1 (a glossary) first, then its neighbour
    n = 60
    candidates = [(s, 1, 0.9, "similar") for s in range(2, n)] + [
        (s, s + 1 if s + 1 < n else 2, 0.5, "similar") for s in range(2, n)
    ]
    existing = [(0, t, False) for t in range(1, n)]
    site = _site(n, existing=existing, candidates=candidates)
    planned, _ = plan_links(site, PlanOptions(hub_links=0, max_inlinks=40, max_target_share=0.05))
    into = planned.group_by("target").len().sort("len", descending=True)
    assert planned.height > 50 and into["len"][0] <= max(2, int(0.05 * planned.height)) + 1


def test_a_section_index_links_its_menu_members_and_main_sections_are_hubs_first():
    # the menu: 1 and 2 at its top level, 3..14 under 1; 15 the first page of a paginated listing
    members = list(range(3, 15))
    sections = SiteSections(
        parent=np.full(len(members), 1), child=np.array(members), main_sections=np.array([1, 2]),
        listings=np.array([15]),
    )  # fmt: skip
    candidates = [(1, t, 0.01 * t, "menu") for t in members] + [(3, 4, 0.9, "similar")]
    site = _site(16, candidates=candidates, existing=[(0, 3, True)], sections=sections)
    options = PlanOptions(out_link_budget=4, section_links=10, hub_links=3)
    planned, planner = plan_links(site, options)
    section = planned.filter(pl.col("reason") == "section")
    # up to section_links, the most probable members first, whatever the out-link budget
    assert section["source"].unique().to_list() == [1]
    assert section["target"].to_list() == list(range(14, 4, -1))
    assert planner.out_budget[1] == 0 and planner.out_budget[15] > options.out_link_budget - 1
    assert planner.hubs[:2] == [1, 2]  # the menu's top level before the most central pages
    checks = check_plan(
        planned, _anchored([f"anchor {i}" for i in range(planned.height)]), site.existing, planner, 0, options
    )
    assert next(c for c in checks if c.name == "link_plan_within_budget").passed


def test_depth_shortcuts_bring_a_chain_within_the_limit():
    chain = [(i, i + 1, True) for i in range(7)]  # home -> 1 -> ... -> 7
    similar = [(i, j, 0.9 - 0.05 * abs(i - j)) for i in range(8) for j in range(i + 1, 8)]
    site = _site(8, related=similar, existing=chain)
    planned, planner = plan_links(
        site, PlanOptions(max_depth=3, hub_links=0, max_inlinks=1, out_link_budget=3)
    )
    depth = click_depth(planner.current_graph(), 0)
    assert depth.max() <= 3 and planner.stats.too_deep_after == 0
    assert "depth-shortcut" in set(planned["reason"])


def test_unreachable_groups_are_bridged_through_their_most_central_page():
    existing = [(0, 1, True), (1, 2, True), (3, 4, True), (4, 5, True), (5, 3, True), (4, 3, True)]
    vectors = np.eye(6, dtype=np.float32) + 0.1
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    site = _site(6, existing=existing, related=[(4, 2, 0.7), (3, 5, 0.6)], vectors=vectors)
    planned, planner = plan_links(site, PlanOptions(hub_links=0, max_inlinks=1))
    bridge = planned.filter(pl.col("reason") == "component-bridge")
    assert planner.stats.unreachable_after == 0
    assert bridge.height == 1 and bridge["target"][0] in (3, 4, 5)


def test_impossible_constraints_are_reported_not_hidden():
    existing = [(0, 1, True), (1, 2, True), (2, 1, True)]  # everyone's budget (1) is spent; page 3 orphaned
    site = _site(4, existing=existing, similar=[(3, 1, 0.9)])
    planned, planner = plan_links(site, PlanOptions(out_link_budget=1, hub_links=0, max_inlinks=1))
    assert planner.stats.unresolved_orphans == ["0000000000000003"]
    assert any("stay unreachable" in note for note in planner.stats.notes)
    assert planned.is_empty()


def test_plan_invariants_catch_a_broken_plan():
    existing = [(0, 1, True), (0, 2, True), (1, 3, True)]
    site = _site(5, existing=existing, related=[(4, 3, 0.9), (4, 2, 0.8)])
    options = PlanOptions(out_link_budget=3, hub_links=0, max_inlinks=1)
    planned, planner = plan_links(site, options)
    anchors = [f"anchor {i}" for i in range(planned.height)]
    checks = {c.name: c for c in check_plan(planned, _anchored(anchors), site.existing, planner, 0, options)}
    assert list(checks) == list(PLAN_INVARIANTS) and all(c.passed for c in checks.values())
    # an anchor the site's own links already give another page counts against the cap
    taken = {"anchor 0": {1}}
    found = check_plan(planned, _anchored(anchors), site.existing, planner, 0, options, taken)
    assert not next(c for c in found if c.name == "link_plan_anchors").passed
    # the same link twice under two anchors; one anchor text on two pages; page 0 over its budget (2 + 2 > 3)
    rows = [(2, 4, "anchor 0"), (2, 4, "another anchor"), (3, 1, "anchor 0"), (0, 3, None), (0, 4, None)]
    broken = pl.DataFrame(
        [(s, t, "topical", 0.5, "semantic", "contextual", []) for s, t, _ in rows],
        schema=planned.schema,
        orient="row",
    )
    found = check_plan(broken, _anchored([a for _, _, a in rows]), site.existing, planner, 1, options)
    checks = {c.name: c for c in found}
    assert not checks["link_plan_anchors"].passed and checks["link_plan_anchors"].blocking
    assert checks["link_plan_anchors"].figures["pairs_with_two_links"] == 1
    assert checks["link_plan_anchors"].figures["examples"] == ["anchor 0"]
    assert not checks["link_plan_within_budget"].passed and checks["link_plan_within_budget"].blocking
    assert not checks["link_plan_no_orphans"].passed and not checks["link_plan_no_orphans"].blocking
    # links no signal relates (3 -> 1, 0 -> 3, 0 -> 4: 2 -> 4 has its texts' evidence), and an orphan
    # rescue from a page with room that nothing says is about the same thing, fail the plan
    related = checks["link_plan_links_related"]
    assert not related.passed and related.blocking and related.figures["links_without_evidence"] == 3
    rescue = pl.DataFrame(
        [(1, 4, "orphan-rescue", 0.0, "semantic", "contextual", [])], schema=planned.schema, orient="row"
    )
    found = check_plan(rescue, _anchored(["anchor"]), site.existing, planner, 0, options)
    related = next(c for c in found if c.name == "link_plan_links_related")
    assert not related.passed and related.figures["examples"] == [
        f"{1:016x} -> {4:016x} (orphan-rescue, None, no candidate)"
    ]
    # a generic phrase placed in the text, a phrase with no sentence, a URL path anywhere
    rules = AnchorRules(function_words("en"))
    anchored = _anchored(["this example", "Alpine Boots", "/guides/boots/", "Trail Runners"])
    anchored.sentences[1] = "Alpine Boots"
    anchored.offsets[2] = None
    found = check_plan(broken.head(4), anchored, site.existing, planner, 0, options, rules=rules)
    readable = next(c for c in found if c.name == "link_plan_anchors_readable")
    assert (
        not readable.passed
        and readable.blocking
        and readable.figures["examples"]
        == [
            "this example (generic)",
            "Alpine Boots (not in a sentence of its own)",
            "/guides/boots/ (URL path)",
        ]
    )


def test_bad_plan_settings():
    with pytest.raises(Exception, match="out_link_budget and max_depth must be at least 1"):
        plan_links(_site(2), PlanOptions(out_link_budget=0))
    with pytest.raises(Exception, match="min_inlinks must be between 0 and max_inlinks"):
        plan_links(_site(2), PlanOptions(min_inlinks=5, max_inlinks=2))


def test_anchors_are_phrases_an_editor_keeps_or_the_targets_name():
    text = "Before a long hike, lace the Alpine Boot snugly."
    assert placed_mention(text, text.lower().index("alpine boot"), 2) == (
        "Alpine Boot",
        29,
        "Before a long hike, lace the Alpine Boot snugly.",
    )
    assert placed_mention(text, 3, 2) is None  # not at a word's start
    refused = {
        "Edit postcss.config.mjs to add the plugin to the build.": ("postcss", 1),  # inside a file name
        "Pack the tent. Boots go on top of it, always.": ("tent. Boots", 2),  # across a sentence's end
        "Filter Description :-- :-- boots for the winter season": ("boots", 1),  # a table row's debris
        "Walking Boots : lace them snugly before a long hike.": ("Walking Boots", 2),  # a heading
        "Call `resize` with the width you want here.": ("resize", 1),  # in code
        "Using Assembly Language in __asm Blocks": ("__asm", 1),  # a "see also" line, no sentence
    }
    for sentence, (phrase, words) in refused.items():
        assert placed_mention(sentence, sentence.index(phrase), words) is None, phrase
    # the page's own heading and a quoted message a section heading follows are no place for a link: the
    # same phrase further down, in a sentence, is
    text = (
        "Compiler Warning C4961 No profile data was merged, profile-guided optimizations disabled Remarks "
        "No profile data was available, so profile-guided optimizations cannot take place."
    )
    lead = heading_lead(text, ["Compiler Warning C4961"])
    assert lead == 22 and placed_mention(text, 0, 2, lead) is None
    assert placed_mention(text, text.index("profile-guided"), 3, lead) is None
    assert first_placed(text, text.index("profile-guided"), 3, lead) == (
        "profile-guided optimizations",
        text.rindex("profile-guided"),
        "No profile data was available, so profile-guided optimizations cannot take place.",
    )
    usage = "Usage When fitting, you must provide both width and height."
    assert placed_mention(usage, usage.index("width"), 1).sentence == usage[6:]
    rules = AnchorRules(function_words("en"), spread=frozenset({"details"}), common=frozenset({"function"}))
    for anchor, why in [
        ("this example", "generic"), ("these options", "generic"), ("this directory structure", "generic"),
        ("and", "generic"), ("Details", "generic"), ("function", "generic"),
        ("/methods/page/prev/", "URL path"), ("postcss.config.mjs", "URL path"), ("Alpine Boot", None),
        ("function templates", None),
    ]:  # fmt: skip
        assert rules.refusal(anchor) == why, anchor
    pages = pl.DataFrame(
        {
            "body_text": [
                f"page {i} uses a function and a {'rare' if i == 0 else 'plain'} word" for i in range(60)
            ],
            "meta_description": [None] * 60,
        }
    )
    site_rules = anchor_rules(pages, {"details": {1, 2, 3}, "alpine boot": {4}}, function_words("en"))
    assert site_rules.spread == {"details"} and {"function", "plain"} <= site_rules.common
    # a word on 6 of 200 pages is common where the texts are a description each, not where they are full
    # pages (there it takes 5% of them)
    for filler, common in (("", True), (" more" * 400, False)):
        texts = [f"page {i} {'date' if i < 6 else 'time'} text{filler}" for i in range(200)]
        pages = pl.DataFrame({"body_text": texts, "meta_description": [None] * 200})
        assert ("date" in anchor_rules(pages, {}, function_words("en")).common) is common
    assert "rare" not in site_rules.common  # on one page of 60
    assert target_names("Overview | Gear", "Overview", "Boots") == [
        "Overview",
        "Overview | Gear",
        "Overview (Boots)",
    ]
    assert target_names(None, None, None, "/guides/winter-hiking/") == ["Winter hiking"]
    # a heading forty pages share ("documentation tag") is no one's name while the title is left; a slash in
    # words is a name, not a URL path
    title = "<remarks> (C++ documentation comments)"
    assert target_names(title, "documentation tag", None, None, frozenset({"documentation tag"})) == [
        "<remarks>",
        title,
    ]
    # ... and an option's name, a slash before one word, is its page's name, as is a directive's leading dot
    assert target_names("/DELAYLOAD (Delay Load Import)", None, None) == [
        "/DELAYLOAD",
        "/DELAYLOAD (Delay Load Import)",
    ]
    assert target_names("ALL", "/ALL", None) == ["/ALL", "ALL"]
    assert target_names(".SAVEREG", ".SAVEREG", None) == [".SAVEREG"]
    assert [url_like(text) for text in ("/ALL", "/", "/about/", "/methods/page/prev", "a/b")] == [
        False, True, True, True, True,
    ]  # fmt: skip
    links = pl.DataFrame(
        {
            "source": [1, 2, 3, 4, 5],
            "target": [7, 8, 7, 9, 10],
            "score": [0.9, 0.8, 0.7, 0.6, 0.5],
            "placement": ["contextual", "contextual", "contextual", "home", "contextual"],
            "mention_text": [None, "this example", "Alpine Boot", None, "Alpine Boot"],
            "mention_offset": [None, 3, 29, None, 4],
            "sentence": [None, "See this example for more.", text, None, "The Alpine Boot fits."],
        }
    )
    names = {7: ["Alpine Boots"], 8: ["Down Bags"], 9: ["Contact Us", "Contact Us (Help)"], 10: ["Boot Care"]}
    anchored = choose_anchors(links, names, rules, 1, taken={"contact us": {3}})
    # the phrase in place where it passes the rules; a generic phrase and a link to the home page's sections
    # take the target's name; "Contact Us" already points at page 3, so page 9 takes its next name; "Alpine
    # Boot" already names page 7, so page 10 goes in the related links under its own
    assert anchored.anchors == ["Alpine Boots", "Down Bags", "Alpine Boot", "Contact Us (Help)", "Boot Care"]
    assert anchored.offsets == [None, None, 29, None, None]
    assert anchored.placements == ["related", "related", "contextual", "home", "related"]
    assert anchored.sentences[2] == text and anchored.sentences[1] is None


def test_existing_links_split_navigation_from_content_and_keep_pass_through_pages():
    links = pl.DataFrame(
        {
            "link_type": ["Hyperlink", "Hyperlink", "Hyperlink", "Image", "Hyperlink", "Hyperlink"],
            "source_url": [
                "https://x.example/",
                "https://x.example/",
                "https://x.example/a",
                "https://x.example/",
                "https://x.example/list?page=2",
                "https://x.example/a",
            ],
            "target_url": [
                "https://x.example/a",
                "https://x.example/b/",
                "https://x.example/b",
                "https://x.example/c",
                "https://x.example/c",
                "https://x.example/c",
            ],
            "link_position": ["Header", "Content", "Footer", "Content", "Content", "Content"],
            "follow": [True, True, True, True, True, False],
        }
    )
    keys = pl.Series(["x.example/", "x.example/a", "x.example/b", "x.example/c"])
    edges, nodes = existing_links(links, keys)
    assert nodes == 5  # the paginated listing is a pass-through node
    assert sorted(edges.rows()) == [(0, 1, False), (0, 2, True), (1, 2, False), (4, 3, True)]


def test_graph_metrics():
    graph = adjacency(4, np.array([0, 0, 1]), np.array([1, 2, 3]))
    assert click_depth(graph, 0).tolist() == [0, 1, 1, 2]
    assert gini(np.array([3, 3, 3])) == 0 and gini(np.array([0, 0, 9])) == pytest.approx(2 / 3)
    assert pagerank(graph).sum() == pytest.approx(1.0)
    summary, *_ = summarize(graph, 0)
    assert summary.orphan_pages == 0 and json.loads(summary.depth_histogram) == {
        "0": 1,
        "1": 2,
        "2": 1,
        "unreachable": 0,
    }
    assert summary.share_depth_le_3 == 1.0


def test_the_before_after_table_reads_counts_as_counts():
    # 12,000 pages in a chain: counts past 4 digits, shares and the Gini with long decimals
    graph = adjacency(12_000, np.arange(11_999), np.arange(1, 12_000))
    summary, *_ = summarize(graph, 0)
    table = dict(zip(SUMMARY_ROWS, comparison(None, summary)["after"], strict=True))
    shown = {key: value for (key, _), value in table.items()}
    assert shown["links"] == "11,999" and shown["max_depth"] == "11,999"  # whole, not 1.2e+04 nor 11999.0
    assert shown["share_depth_le_3"] == f"{significant(4 / 12_000):g}" == "0.0003333"
    assert comparison(None, summary)["before"].is_null().all()


def test_betweenness_exact_and_estimated_agree_on_the_centre():
    star = pl.DataFrame({"u": [0] * 50 + list(range(1, 50)), "v": list(range(1, 51)) + list(range(51, 100))})
    exact, method = betweenness(100, star, PlanOptions(exact_centrality_below=1000))
    estimate, estimated = betweenness(
        100, star, PlanOptions(exact_centrality_below=10, centrality_samples=40)
    )
    assert method == "exact betweenness" and estimated.startswith("betweenness estimated from 40")
    assert np.argmax(exact) == np.argmax(estimate) == 0
    again, _ = betweenness(100, star, PlanOptions(exact_centrality_below=10, centrality_samples=40))
    assert np.array_equal(estimate, again)  # sampled, yet the same plan every run


def test_sorted_hash_sets_agree_with_numpy_set_routines():
    rng = np.random.default_rng(11)
    for size in (0, 1, 2, 50, 5000):
        a = rng.integers(0, max(1, size), size).astype(np.uint64)
        b = rng.integers(0, max(1, size), rng.integers(0, size + 2)).astype(np.uint64)
        assert np.array_equal(sorted_unique(a), np.unique(a))
        assert shared_count(np.unique(a), np.unique(b)) == len(np.intersect1d(a, b))


def test_a_kept_centrality_estimate_is_reused_until_the_graph_moves_past_the_limit():
    rng = np.random.default_rng(3)
    n = 400
    ids = np.array([f"p{i:04d}" for i in range(n)])
    u = rng.integers(0, n, 3000)
    pairs = (
        pl.DataFrame({"a": u, "b": (u + rng.integers(1, 40, 3000)) % n})
        .filter(pl.col("a") != pl.col("b"))
        .select(pl.min_horizontal("a", "b").alias("u"), pl.max_horizontal("a", "b").alias("v"))
        .unique()
        .sort("u", "v")
    )
    sampled = PlanOptions(exact_centrality_below=10, centrality_samples=50, recompute_centrality_above=0.05)
    scores, method, kept = centrality(ids, pairs, sampled, None)
    assert kept is not None and method.endswith("(no estimate kept)")

    # a page added at the front (every position shifts), one removed, a few edges changed: reused
    moved = np.concatenate([["p0000a"], ids[:-1]])  # p0399 removed; p0000a is new, at position 1
    position = {page: i for i, page in enumerate(moved)}
    kept_pairs = pairs.filter(pl.col("v") < n - 1).with_columns(
        pl.col("u").replace_strict({i: position[ids[i]] for i in range(n - 1)}, return_dtype=pl.Int64),
        pl.col("v").replace_strict({i: position[ids[i]] for i in range(n - 1)}, return_dtype=pl.Int64),
    )
    extra = pl.DataFrame({"u": [0, 1, 2], "v": [1, 5, 9]}, schema={"u": pl.Int64, "v": pl.Int64})
    changed = pl.concat([kept_pairs, extra]).unique().sort("u", "v")
    again, why, still = centrality(moved, changed, sampled, kept)
    assert still is kept and "reused" in why
    assert again[position["p0000a"]] == 0  # new: the least central until the next estimate
    expected = dict(zip(ids.tolist(), scores.tolist(), strict=True))
    assert all(again[i] == expected[page] for i, page in enumerate(moved) if page != "p0000a")

    # most edges replaced: measured again, and that estimate is kept
    rewired = pairs.with_columns(((pl.col("v") + 7) % n).alias("v")).filter(pl.col("u") != pl.col("v"))
    rewired = rewired.select(pl.min_horizontal("u", "v").alias("u"), pl.max_horizontal("u", "v").alias("v"))
    fresh, why, renewed = centrality(ids, rewired.unique().sort("u", "v"), sampled, kept)
    assert renewed is not kept and "recomputed" in why
    assert np.array_equal(fresh, betweenness(n, rewired.unique().sort("u", "v"), sampled)[0])

    # exact betweenness is always measured, never kept
    exact, method, none = centrality(ids, pairs, PlanOptions(exact_centrality_below=n + 1), kept)
    assert none is None and method == "exact betweenness"
    assert np.array_equal(exact, betweenness(n, pairs, PlanOptions(exact_centrality_below=n + 1))[0])


def _checks(result):
    """The link_plan step's check evaluations (on each of its tables) by name."""
    return {
        e.event_specific_data.check_name: e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.step_key == "link_plan"
    }


def test_plan_on_the_sample(sample_site):
    assert sample_site.success
    checks = _checks(sample_site)
    assert set(checks) == {
        "graph_link_plan_schema",
        "graph_page_metrics_schema",
        "graph_site_metrics_schema",
        "graph_link_plan_changes_schema",
        "graph_live_links_schema",
        "link_plan_targets_are_pages",
        "link_plan_within_budget",
        "link_plan_links_related",
        "link_plan_anchors",
        "link_plan_anchors_readable",
        "link_plan_no_orphans",
        "link_plan_depth_target",
        "link_plan_keeps_accepted",
    }
    assert all(check.passed for check in checks.values()), [n for n, c in checks.items() if not c.passed]
    with connect(sample_site.warehouse, read_only=True) as con:
        after = (
            con.execute("SELECT * FROM graph.site_metrics WHERE scenario = 'after'").pl().row(0, named=True)
        )
        before = (
            con.execute("SELECT * FROM graph.site_metrics WHERE scenario = 'before'").pl().row(0, named=True)
        )
        plan = con.execute("SELECT * FROM graph.link_plan").pl()
        pages = con.execute("SELECT page_id, path, coalesce(h1, title) AS name FROM staging.pages").pl()
        repeated = con.execute(
            "SELECT count(*) FROM graph.link_plan p JOIN raw.crawl_links l ON l.source_url = p.source_url "
            "AND l.target_url = p.target_url"
        ).fetchone()[0]
        backtest = con.execute("SELECT * FROM graph.backtest_runs").pl().row(0, named=True)
        left = con.execute("SELECT path, near_duplicate_of FROM graph.page_metrics JOIN staging.pages "
                           "USING (site, page_id) WHERE inlinks_after = 0").pl()  # fmt: skip
    # blog posts and guides left unlinked, all rescued but those saying what a rescued one says (named) and
    # the privacy policy (a utility page, left to the menus)
    assert before["orphan_pages"] > 500 and after["orphan_pages"] == left.height
    named = left["near_duplicate_of"].is_not_null()
    utility_left = pl.Series(pages_matching(left["path"], UTILITY_PAGES), dtype=pl.Boolean)
    assert named.any() and (named | utility_left).all()
    assert after["max_depth"] <= 4 and after["unreachable_pages"] == left.height
    assert after["inlink_gini"] < before["inlink_gini"]
    assert repeated == 0
    # one anchor text in the text points at one page; a name in the related links is shared only by pages
    # that share their whole H1 or title (the sample has such near-duplicates)
    assert plan.filter(pl.col("anchor_offset").is_not_null()).is_empty()  # no body text: none in the text
    shared = (
        plan.join(pages.select("page_id", "name"), left_on="target_page_id", right_on="page_id")
        .group_by(pl.col("anchor_text").str.to_lowercase())
        .agg(pl.col("target_page_id").n_unique().alias("targets"), pl.col("name").n_unique().alias("names"))
    )
    assert (shared.filter(pl.col("targets") > 1)["names"] == 1).all()
    assert set(plan["placement"]) <= {"related", "home", "listing"}
    # no link is placed on a utility page (the sample's About Us, Contact, Privacy Policy)
    utility = pages.filter(pl.Series(pages_matching(pages["path"], UTILITY_PAGES)))["page_id"]
    assert utility.len() >= 3 and not plan["source_page_id"].is_in(utility.implode()).any()
    # topical links are the ranker's probable ones; structure is met by the most probable source there is
    # (the sample's own in-content links are listings and menus: the ranker finds few topical pairs likely)
    topical = plan.filter(pl.col("reason") == "topical")
    assert (topical["probability"] >= PlanOptions().min_probability).all()
    # most orphans are rescued by a candidate source the ranker scored (the rest by their nearest page)
    assert plan.filter(pl.col("reason") == "orphan-rescue")["probability"].is_not_null().mean() > 0.6
    # a structural link whose source scores under min_probability is weak and names its alternatives; no
    # link the report calls the editors' choice scores under it
    structural = pl.col("reason").is_in(["orphan-rescue", "component-bridge", "depth-shortcut"])
    unlikely = pl.col("probability").fill_null(0.0) < PlanOptions().min_probability
    assert plan.select((pl.col("weak") == (structural & unlikely)).all()).item()
    weak = plan.filter("weak")
    # it names its alternatives, or it joins the list of the target's own section (often its only related
    # source: a blog post nobody links goes on the blog's index)
    named = (weak["alternative_source_urls"].list.len() > 0) | (weak["placement"] == "listing")
    assert weak.height and named.mean() > 0.9
    assert (plan.filter(~structural)["alternative_source_urls"].list.len() == 0).all()
    words = plan_in_words(plan)
    editors = words.filter(pl.col("why").str.contains("editors would link"))
    # (the sample's few likely topical pairs point into its best-linked quarter, its categories, which take
    # no link beyond their quota: the backtest's rebuilt plan still has some, by_reason below)
    assert editors["confidence"].is_in(["high", "medium"]).all()
    assert words.filter("weak")["why"].str.contains("weak: no page is a likely place for it").all()
    # the run measured itself: the backtest beats the same-budget title-cosine list
    assert backtest["hidden_links"] > 200 and backtest["plan_links"] > 0
    assert backtest["plan_precision"] > backtest["baseline_precision"]
    assert backtest["candidate_precision_at_k"] > backtest["baseline_precision_at_k"]
    # the orphan backtest: pages made orphans, each rescue's source against the pages that linked to it
    assert backtest["orphaned_pages"] > 20 and backtest["orphan_rescues"] > 0
    assert backtest["orphan_rescue_precision"] > backtest["orphan_baseline_precision"]
    by_reason = {row["reason"]: row for row in json.loads(backtest["precision_by_reason"])}
    assert {"links", "hits", "precision", "recall", "known", "known_precision", "reachable",
            "reachable_precision"} <= set(by_reason["topical"])  # fmt: skip
    assert all(row["reachable"] <= row["known"] <= row["links"] for row in by_reason.values())
    assert by_reason["topical"]["links"] > 0 and by_reason["topical"]["precision"] > 0.5
    backtest_meta = materialization_metadata(sample_site, "link_backtest")
    assert "plan precision" in backtest_meta["ours_vs_baseline"]["figure"].to_list()
    # each figure with its 95% interval: in the row, and beside the figure in the metadata
    low, high = json.loads(backtest["intervals"])["plan_precision"]
    assert low <= backtest["plan_precision"] <= high
    shown = backtest_meta["ours_vs_baseline"].filter(pl.col("figure") == "plan precision")["ours 95%"][0]
    assert shown == f"[{low:.3f}, {high:.3f}]"
    # figures for people: 4 significant digits (the table keeps full precision)
    figures = [value for value in backtest_meta.values() if isinstance(value, float)]
    assert len(figures) >= 6 and all(value == significant(value) for value in figures)
    assert "orphan-rescue" in set(plan["reason"])


def _rows_naming(con, page_id: str) -> dict[str, int]:
    """Rows of every warehouse table that name `page_id` in a page-id column (or list of them)."""
    found = {}
    for schema, table, column, kind in con.execute(
        "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE column_name LIKE '%page_id%'"
    ).fetchall():
        test = f"list_contains({column}, ?)" if kind.endswith("[]") else f"{column} = ?"
        count = con.execute(f"SELECT count(*) FROM {schema}.{table} WHERE {test}", [page_id]).fetchone()[0]
        if count:
            found[f"{schema}.{table}.{column}"] = count
    return found


CANDIDATES_SQL = "SELECT * FROM ml.link_candidates ORDER BY source_page_id, target_page_id"


def test_a_recrawl_keeps_the_plan_and_says_what_changed(tmp_path, instance, sample_site):
    """The sample re-crawled with 1% of its titles changed, one linked page gone and three in-content links
    gone: the candidates are updated and equal a rebuild; the new plan keeps at least 95% of the last
    one's links, graph.link_plan_changes accounts for every link of both plans, and the gone page is left
    in no table but as the removed links' page."""
    planned = sample_site.phases["plan"].copy(tmp_path / "site")  # the first plan, of the sample's crawl
    warehouse, inbox_root = planned.warehouse, planned.inbox
    first = materialization_metadata(sample_site, "link_plan")
    assert first["plan_stability"] == "no previous plan"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        previous = con.execute("SELECT * FROM graph.link_plan").pl()
        # the page the plan links to most (ties by id: the choice is the same every run) that carries no
        # planned link itself (the guides hub, gone, would take its 174 listed guides' links with it)
        gone_id, gone_url = con.execute(
            "SELECT p.page_id, p.crawled_url FROM staging.pages p JOIN graph.link_plan l "
            "ON l.target_page_id = p.page_id WHERE NOT p.is_home "
            "AND p.page_id NOT IN (SELECT source_page_id FROM graph.link_plan) "
            "GROUP BY ALL ORDER BY count(*) DESC, p.page_id LIMIT 1"
        ).fetchone()
    export = pl.read_csv(SAMPLE_DIR / "internal_all.csv", infer_schema=False)
    recrawl = export.filter(pl.col("Address") != gone_url).with_columns(
        pl.when(pl.int_range(pl.len()) % 100 == 3)
        .then(pl.col("Title 1") + " (new edition)")
        .otherwise(pl.col("Title 1"))
        .alias("Title 1")
    )
    recrawl.write_csv(tmp_path / "internal_all.csv")
    # and three in-content links gone from one page
    links = pl.read_csv(SAMPLE_DIR / "all_inlinks.csv", infer_schema=False)
    content = links.filter(pl.col("Link Position") == "Content")
    dropped = content.filter(pl.col("Source") == content["Source"][200]).head(3)
    links.join(dropped, on=links.columns, how="anti").write_csv(tmp_path / "all_inlinks.csv")
    register_crawl(inbox_root, SAMPLE_HOST, tmp_path / "internal_all.csv", tmp_path / "all_inlinks.csv")
    second = run_site(warehouse, inbox_root, instance, SAMPLE_HOST, steps=UP_TO_PLAN)
    assert second.success and all(check.passed for check in _checks(second).values())
    meta = materialization_metadata(second, "link_plan")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        plan = con.execute("SELECT * FROM graph.link_plan").pl()
        changes = con.execute("SELECT * FROM graph.link_plan_changes").pl()
        naming = _rows_naming(con, gone_id)
        candidates = con.execute(CANDIDATES_SQL).pl()
    # the candidates were updated, not rebuilt, and are exactly what a build from scratch gives
    built = materialization_metadata(second, "link_candidates")
    assert built["build"] == "incremental" and 0 < built["pairs_featured"] < candidates.height / 2
    assert built["rows_written"] + built["rows_reused"] == candidates.height
    rebuild = {"ops": {"link_candidates": {"config": {"rebuild": True}}}}
    third = run_site(
        warehouse, inbox_root, instance, SAMPLE_HOST, run_config=rebuild, steps=["link_candidates"]
    )
    assert materialization_metadata(third, "link_candidates")["build"] == "full"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert_frame_equal(candidates, con.execute(CANDIDATES_SQL).pl())
    pair = ["source_page_id", "target_page_id"]
    kept = changes.filter(pl.col("change") == "kept")
    assert meta["plan_stability"] == significant(kept.height / previous.height) >= 0.95
    assert kept.height + changes.filter(pl.col("change") == "removed").height == previous.height
    assert kept.height + changes.filter(pl.col("change") == "added").height == plan.height
    assert (
        changes.filter(pl.col("change") != "removed")
        .select(pair)
        .sort(pair)
        .equals(plan.select(pair).sort(pair))
    )
    gone = changes.filter((pl.col("source_page_id") == gone_id) | (pl.col("target_page_id") == gone_id))
    assert gone.height and set(gone["change"]) == {"removed"} and set(gone["why"]) == {"page removed"}
    # the gone page is named only by the removed links that record it
    assert set(naming) <= {"graph.link_plan_changes.source_page_id", "graph.link_plan_changes.target_page_id"}
    assert set(changes.filter(pl.col("change") == "kept")["why"]) <= {
        "still valid",
        "planned again after a change",
    }
    assert ("kept", "still valid") in meta["changes_since_last_plan"].select("change", "why").rows()


def test_plan_on_real_crawls_with_and_without_inlinks(light_and_nutri):
    light, nutri = light_and_nutri.for_site(LIGHT), light_and_nutri.for_site(NUTRI)
    assert light.success and nutri.success
    with connect(light_and_nutri.warehouse, read_only=True) as con:
        metrics = con.execute(
            "SELECT site, scenario, orphan_pages, links_known FROM graph.site_metrics ORDER BY ALL"
        ).fetchall()
        nutri_reasons = dict(
            con.execute(
                "SELECT reason, count(*) FROM graph.link_plan WHERE site = ? GROUP BY reason", [NUTRI]
            ).fetchall()
        )
        nutri_pages = con.execute(
            "SELECT p.crawl_depth, p.crawl_inlinks, m.depth_before, m.inlinks_before, m.planned_outlinks "
            "FROM staging.pages p JOIN graph.page_metrics m USING (site, page_id) WHERE site = ? "
            "AND NOT p.is_home",
            [NUTRI],
        ).pl()
        backtested = con.execute("SELECT DISTINCT site FROM graph.backtest_runs").fetchall()
    assert metrics == [
        (NUTRI, "after", 0, "counts"), (NUTRI, "before", 0, "counts"),
        (LIGHT, "after", 5, "links"), (LIGHT, "before", 14, "links"),
    ]  # fmt: skip  # the 5 left: utility pages (client form, sample page, ...) left to the site's menus
    # no links export: the crawl's counts and depths are the "before"; every page has in-links in the crawl,
    # so nothing is an orphan to rescue, and nothing is deeper than max_depth (4 clicks); the home page's
    # hub links aside, every page keeps to its budget
    assert (nutri_pages["depth_before"] == nutri_pages["crawl_depth"].clip(1)).all()
    assert (nutri_pages["inlinks_before"] == nutri_pages["crawl_inlinks"]).all()
    # its products sit below URL folders that are no pages and, without a links export, no listing is
    # known: the home page takes no hub link rather than links to leaf pages
    assert nutri_reasons.keys() <= {"section", "topical"}
    assert nutri_pages["planned_outlinks"].max() <= PlanOptions().out_link_budget
    # without a links export there is nothing to hide: the backtest says so, and the plan stands
    assert backtested == [(LIGHT,)]
    skipped = materialization_metadata(nutri, "link_backtest")["skipped"]
    assert skipped.startswith("no in-content links to hide: the site has no All Inlinks export")
    ranker = materialization_metadata(nutri, "link_ranker")
    assert ranker["model"] == "default" and "fewer than min_positives (40)" in ranker["why"]


def test_constraints_that_cannot_be_met_give_warnings_with_the_reason(tmp_path, instance, sample_site):
    site = sample_site.folder.copy(tmp_path / "site")
    # only the home page is near enough to link a page, and it lists its own sections only
    config = {"ops": {"link_plan": {"config": {"out_link_budget": 1, "max_depth": 1}}}}
    result = run_site(
        site.warehouse, site.inbox, instance, SAMPLE_HOST, run_config=config, steps=["link_plan"]
    )
    assert result.success  # the plan is written, and the checks say what could not be done
    checks = _checks(result)
    depth = checks["link_plan_depth_target"]
    assert not depth.passed and depth.severity == dg.AssetCheckSeverity.WARN
    assert "is the home page with room for a link (left for an editor" in depth.metadata["why"].value
    assert checks["link_plan_within_budget"].passed


def test_a_plan_refuses_page_vectors_of_another_model(tmp_path, instance, sample_site):
    """The plan embeds sentences with the configured model beside ml.page_embeddings: vectors another
    model made stop it with one sentence, and the plan already written stays as it was."""
    site = sample_site.folder.copy(tmp_path / "site")
    with duckdb.connect(str(site.warehouse)) as con:
        con.execute(
            "UPDATE ml.page_embeddings SET model = 'other-model@0123abcd' WHERE site = ?", [SAMPLE_HOST]
        )
        before = con.execute("SELECT link_id FROM graph.link_plan ORDER BY link_id").fetchall()
    result = run_site(site.warehouse, site.inbox, instance, SAMPLE_HOST, steps=["link_plan"])
    assert not result.success
    message = failure_message(result)
    assert f"ml.page_embeddings for {SAMPLE_HOST} were made by other-model@0123abcd" in message
    assert "materialise page_embeddings again" in message
    with duckdb.connect(str(site.warehouse), read_only=True) as con:
        assert con.execute("SELECT link_id FROM graph.link_plan ORDER BY link_id").fetchall() == before


def test_the_marts_accept_every_reason_the_plan_gives():
    import yaml

    from interlink_pipeline.core.warehouse.vocabularies import PLAN_REASONS

    marts = yaml.safe_load((PROJECT_ROOT / "dbt/models/marts/marts.yml").read_text())
    model = next(m for m in marts["models"] if m["name"] == "link_opportunities")
    reason = next(c for c in model["columns"] if c["name"] == "reason")
    accepted = next(t["accepted_values"] for t in reason["data_tests"] if "accepted_values" in t)
    assert accepted["arguments"]["values"] == list(PLAN_REASONS)


def test_the_depth_histogram_is_a_markdown_table_one_row_per_depth():
    from interlink_pipeline.defs.graph.link_plan import _bars

    lines = _bars('{"0": 1, "1": 12, "2": 0, "unreachable": 3}').splitlines()
    assert lines[:2] == ["| clicks | pages | |", "|---|---:|---|"]
    assert lines[2:] == [
        "| 0 | 1 | ██ |",
        f"| 1 | 12 | {'█' * 24} |",
        "| 2 | 0 |  |",
        f"| unreachable | 3 | {'█' * 6} |",
    ]


def test_each_run_leaves_figures_the_ui_plots_over_time(tmp_path, instance, sample_site):
    """The asset's Plots tab charts numeric metadata run after run: a site's orphans, depth, links planned
    and run time over three plans (the backtest's precision sits on graph/backtest_runs), and only the few
    figures worth a trend are numbers (the rest are tables: sites are not a time axis). Dagster draws every
    site on one line, so the step's `trend` table holds this site's runs alone."""
    site = sample_site.folder.copy(tmp_path / "site")
    plan_key = dg.AssetKey(["graph", "link_plan"])
    instance.add_dynamic_partitions("sites", ["other.example"])  # another site's plan, between the runs
    instance.report_runless_asset_event(
        dg.AssetMaterialization(plan_key, partition="other.example", metadata={"planned_links": 99_999})
    )
    for budget in (None, 12, 8):
        config = {"ops": {"link_plan": {"config": {"out_link_budget": budget} if budget else {}}}}
        rerun = run_site(
            site.warehouse, site.inbox, instance, SAMPLE_HOST, run_config=config, steps=["link_plan"]
        )
        assert rerun.success
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=plan_key, asset_partitions=[SAMPLE_HOST]), limit=10
    ).records
    plotted = {"planned_links", "orphan_pages_after", "share_depth_le_3_after", "links_live", "duration_s",
               "pages_left_for_editor"}  # fmt: skip
    assert len(records) == 3
    for record in records:
        metadata = record.asset_materialization.metadata
        assert record.asset_materialization.partition == SAMPLE_HOST
        numbers = {  # besides Dagster's own and each table's row count
            k
            for k, v in metadata.items()
            if isinstance(v.value, int | float) and not k.startswith(("dagster/", "rows "))
        }
        assert plotted <= numbers <= plotted | {"plan_stability", "acceptance_rate", "accepted_not_kept"}, (
            numbers
        )
        # the orphans left are named near-duplicates and the privacy policy (see test_plan_on_the_sample)
        assert metadata["orphan_pages_after"].value < 100
    trend = records[0].asset_materialization.metadata["trend"].value
    assert [row.data["planned_links"] for row in trend.records] == [
        r.asset_materialization.metadata["planned_links"].value for r in records
    ]  # newest first, the other site's 99,999 not among them
    assert trend.records[0].data["run"] == "this run" and len(trend.records) == 3
    backtests = sample_site.instance.fetch_materializations(dg.AssetKey(["graph", "backtest_runs"]), limit=10)
    measured = backtests.records[0].asset_materialization.metadata
    assert isinstance(measured["plan_precision"].value, float)
    assert measured["trend"].value.records[0].data["plan_precision"] == measured["plan_precision"].value
