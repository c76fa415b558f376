"""Sense before structure and score: budgets that fit the site, the same name in the right branch, broad
targets and names linked only in a sentence about them, anchors that mean their target."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.anchors import AnchorRules, site_anchor_rules, target_names
from interlink_pipeline.core.graph.broad_targets import broad_pages
from interlink_pipeline.core.graph.mention_sense import MentionSense, site_case
from interlink_pipeline.core.graph.plan_options import PlanOptions, link_room
from interlink_pipeline.core.graph.plan_rows import placed_links
from interlink_pipeline.core.graph.planner import plan_links
from interlink_pipeline.core.graph.same_name import name_groups, outside_branch
from interlink_pipeline.core.graph.sensible_candidates import sensible_candidates
from interlink_pipeline.core.graph.sentences import inside_longer_name, placed_mention, title_cased
from interlink_pipeline.core.ingest.site_sections import SiteSections
from interlink_pipeline.core.ml.encoders import SiteEncoder
from interlink_pipeline.core.relevance.confidence import MeasuredConfidence, link_confidence
from interlink_pipeline.core.relevance.url_tree import UrlTree
from interlink_pipeline.core.text import function_words
from interlink_pipeline.defs.ml.embeddings import default_embedder
from interlink_pipeline_tests.test_link_plan import _site

LOCATIONS = ["/", "/tx/", "/tx/austin/", "/tx/austin/oaks/", "/tx/austin/oaks/aspen/",
             "/tx/austin/oaks/home-1/", "/tx/dallas/", "/tx/dallas/pines/aspen/", "/co/denver/aspen/",
             "/co/denver/home-2/"]  # fmt: skip
NAMES = ["Home", "Texas", "Austin", "The Oaks", "Aspen", "12 Elm St", "Dallas", "Aspen", "Aspen", "4 Main St"]


def test_a_link_rich_site_limits_what_the_plan_adds_not_what_a_page_holds():
    options = PlanOptions(out_link_budget=10, added_link_budget=3)
    ordinary = link_room(np.array([2, 4, 12, 0]), SiteSections.empty(), options)
    assert ordinary.rule == "total" and ordinary.left(np.array([2, 4, 12, 0])).tolist() == [8, 6, 0, 10]
    rich = link_room(np.array([25, 14, 30, 3]), SiteSections.empty(), options)
    assert rich.rule == "added" and rich.left(np.array([25, 14, 30, 3])).tolist() == [3, 3, 3, 3]
    assert "median page already has 19.5 in-content links" in rich.why
    # the planner and its budget check read the same rule: an encyclopedia's articles each take new links
    existing = [(s, t, True) for s in range(1, 6) for t in range(1, 6) if s != t] + [(0, 1, True)]
    candidates = [(s, 6, 0.9, "similar") for s in range(1, 6)]
    options = PlanOptions(out_link_budget=3, added_link_budget=1, hub_links=0)
    planned, planner = plan_links(_site(7, existing=existing, candidates=candidates), options)
    assert planner.room.rule == "added" and planned.height >= 2  # each source adds at most one
    assert planned.group_by("source").len()["len"].max() == 1


def test_the_same_name_links_to_the_page_in_the_sources_own_branch_or_none():
    tree = UrlTree(LOCATIONS)
    group = name_groups(pl.DataFrame({"title": NAMES, "h1": [None] * len(NAMES)}))
    assert (group >= 0).sum() == 3 and len(set(group[[4, 7, 8]])) == 1
    # a home in Austin's Oaks: its own community's Aspen, not Dallas' nor Denver's; a Denver home, Denver's
    source = np.array([5, 5, 5, 9, 9, 9])
    target = np.array([4, 7, 8, 4, 7, 8])
    assert outside_branch(tree, group, source, target).tolist() == [False, True, True, True, True, False]
    # Dallas' page: the Aspen below it, not Austin's; Texas' page shares as much with two: none; an Aspen
    # never links another
    pairs = outside_branch(tree, group, np.array([6, 6, 1, 4]), np.array([4, 7, 7, 7]))
    assert pairs.tolist() == [True, False, True, True]


def test_a_heading_that_leaves_its_subject_to_the_title_names_no_page():
    # the crawl keeps "functions" of "<cuchar> functions" (its H1 lost the tag-like name): a word a hundred
    # pages of one folder bear is no shared name, and no anchor; a floor plan's H1 stays its name
    pages = pl.DataFrame(
        {
            "title": ["<cuchar> functions", "<utility> functions", "The Oaks | Austin", "The Oaks | Dallas"],
            "h1": ["functions", "functions", "The Oaks", "The Oaks"],
        }
    )
    assert name_groups(pages).tolist() == [-1, -1, 0, 0]
    assert target_names("<cuchar> functions", "functions", None) == ["<cuchar> functions"]
    assert target_names("The Oaks in Austin", "The Oaks", None)[0] == "The Oaks"


def test_a_broad_page_is_one_most_of_the_sites_topics_link():
    topics = np.array([0, 1, 2, 3, 0, 1])
    linkers = pl.DataFrame({"source": [0, 1, 2, 3, 4, 0], "target": [5, 5, 5, 4, 2, 2]})
    assert broad_pages(topics, linkers).tolist() == [False, False, False, False, False, True]
    # under three topics, "most of them" says nothing
    assert not broad_pages(np.array([0, 1, 0, 1, 0, 1]), linkers).any()


def test_an_anchor_is_never_part_of_a_longer_name_nor_set_in_a_title():
    def placed(text: str, anchor: str) -> str | None:
        found = placed_mention(text, text.index(anchor), len(anchor.split()))
        return found.text if found else None

    assert placed("He rode the New York City Subway every day.", "York") is None
    assert placed("He played in Major League Baseball for years.", "Baseball") is None
    assert placed("The Bank of England sets the rates each month.", "England") is None
    assert placed("Morocco claims Western Sahara as its own land.", "Sahara") is None
    assert placed("The Sahara is a large desert in Africa.", "Sahara") == "Sahara"  # "The" starts it
    assert placed("Chess engines such as Stockfish and Komodo are strong.", "Stockfish") == "Stockfish"
    assert placed("An Analysis of the Alpha-Beta Pruning Algorithm.", "Alpha-Beta Pruning") is None
    assert title_cased("Probabilistic Opponent-Model Search in Bao.")
    assert title_cased("Reinforcement Learning with Hierarchies of Machines.")  # "with" is no word of it
    assert not title_cased("He wrote the program Patzer with Lars Bremer and Ulf Hansen in Berlin.")
    assert not title_cased("Chess Player 2150, played the 1st Computer Olympiad 1989.")
    text = "She wrote the New York City guide."
    assert inside_longer_name(text, text.index("York"), text.index("York") + 4, 0)
    # a description of a kind names no page; a title that starts with "A" does
    rules = AnchorRules(frozenset({"a", "the"}))
    assert rules.refusal("a chess program") == "generic" and rules.refusal("A Tale of Two Cities") is None


def _sense(pages: pl.DataFrame) -> MentionSense:
    """A site's mention sense with the real model: its pages' vectors from their titles and texts."""
    encoder = SiteEncoder(default_embedder().settings())  # no site: int8's auto is fp32
    texts = [f"{t}. {x}" for t, x in pages.select("title", "body_text").iter_rows()]
    return MentionSense.of(pages, encoder.encode(texts), encoder.encode, function_words("en"))


def test_a_phrase_means_its_target_by_its_whole_name_or_a_sentence_about_it():
    titles = ["Home", "Code block render hooks", "Markdown attributes", "Syntax highlighting", "hugo gen",
              "hugo gen chromastyles", "Images", "Chess Game", "Nebula"]  # fmt: skip
    texts = [
        "The documentation of the site.",
        "Override how Hugo renders fenced code blocks with a render hook template of your own, per language.",
        "Add HTML attributes such as class and id to Markdown images, blockquotes, headings and tables.",
        "Hugo highlights the code in fenced code blocks with Chroma, in many styles and languages.",
        "Generate documentation and scripts for the Hugo CLI.",
        "Generate CSS stylesheets for the Chroma code highlighter.",
        "Resize, crop and filter images in your templates.",
        "A game of chess from its first move to its result, as a program records it.",
        "The chess engine Nebula plays on the Internet Chess Club, where Nebula won a blitz tournament.",
    ]
    sense = _sense(_pages(texts, titles))
    # the case the site writes its one-word names in, inside sentences (a sentence's first word aside)
    assert (sense.site_case["nebula"], sense.site_case["images"]) == (True, False)
    command = "Generate the stylesheet with the hugo gen chromastyles command."
    hooks = "A render hook template overrides how Hugo renders code blocks of each language."
    attributes = "Markdown attributes apply to images, blockquotes, code blocks, headings and tables."
    asked = [
        ("code blocks", hooks, 0, 1),  # a word of the name, in a sentence about render hooks
        ("code blocks", attributes, 0, 1),  # ... and in one about attributes
        ("hugo gen", command, 3, 4),  # cut out of another page's longer name
        ("hugo gen chromastyles", command, 3, 5),
        ("Syntax highlighting", "Syntax highlighting works in every fenced block.", 2, 3),  # about it
        # one word, as a name: where the site writes it so (Nebula), it names the page; where the site
        # writes it in lower case (images), a capital does not make it a name: asked of its sentence
        ("Nebula", "He lost a blitz game to the engine Nebula.", 0, 8),
        ("Images", "Open the gallery in Images to crop each one.", 0, 6),
        ("nebula", "The star cluster lies inside a bright nebula of gas.", 0, 8),  # another word: not asked
        ("syntax highlighting", "Hooks may add syntax highlighting to a block.", 0, 1),  # another page's name
        # a title in sentence case describes: an ordinary phrase but in a sentence about its page
        ("markdown attributes", "Hooks read the markdown attributes of a block.", 0, 2),
        ("markdown attributes", "Add a class or an id to an image with markdown attributes.", 0, 2),
        # a proper name as the target writes it, but its first letter; not as written: an ordinary phrase
        ("chess game", "Crop the photo of a chess game to a square.", 0, 7),
        ("Chess Game", "Crop the photo of a Chess Game to a square.", 0, 7),
    ]  # fmt: skip
    phrases, sentences, sources, targets = (list(column) for column in zip(*asked, strict=True))
    assert sense.means(phrases, sentences, sources, targets, 1) == [
        True,
        False,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
        True,
    ]
    # the sentences judged by their words, the phrase left out (Images is nearer the photo's sentence than
    # Chess Game), the namesake not asked; asked again, none is embedded again
    assert sorted(sense._closer.values()) == [0, 0, 0, 0, 0, 1, 2, 4]
    assert not [context for context, _, _ in sense._closer if "star cluster" in context]
    assert sense.means(phrases[:2], sentences[:2], sources[:2], targets[:2], 5) == [True, True]


def test_the_case_a_site_writes_a_name_in_is_told_from_its_sentences_not_its_titles():
    texts = pl.Series(
        [
            "The engine Nebula won the blitz. Nebula lost the final.\nNebula then retired.",
            "Magic Bitboards Revisited, by Kim Walisch. Most engines use bitboards, and Bitboards Now.",
            "Rotated Bitboards and Magic Bitboards, and 0x88 or bitboards in 1998.",
            None,
        ]
    )
    # after a full stop or at a line's start a capital says nothing, nor inside a title's words
    assert site_case(texts, {"nebula", "bitboards", "0x88", "absent"}) == {"nebula": True, "bitboards": False}


def test_a_name_with_the_words_on_both_sides_of_it_may_be_another_pages_name():
    titles = ["Cray Blitz", "Levy versus Cray Blitz 1984", "David Levy"]
    texts = ["A chess program by Robert Hyatt.", "The last match of the Levy bet.", "A Scottish master."]
    sense = _sense(_pages(texts, titles))
    lists = "Levy versus Cray Blitz 1984 Levy versus Deep Thought 1989"
    asked = [
        ("Cray Blitz", lists, 2, 0),  # the match's page, named by the words on both sides
        ("Cray Blitz", "He lost a game to Cray Blitz in 1984.", 2, 0),
    ]
    phrases, sentences, sources, targets = (list(column) for column in zip(*asked, strict=True))
    assert sense.means(phrases, sentences, sources, targets, None) == [False, True]


def _pages(texts: list[str], titles: list[str]) -> pl.DataFrame:
    n = len(texts)
    return pl.DataFrame(
        {"title": titles, "h1": [None] * n, "meta_description": [None] * n, "body_text": texts,
         "path": [f"/p{i}/" for i in range(n)]}
    )  # fmt: skip


def test_a_name_alone_is_evidence_only_where_a_sentence_can_take_the_link():
    # page 1 names Memory (3) in a sentence; page 2 only in a publication's title; page 4 is like 3 by text
    texts = ["Home page of the site.", "The engine keeps its tables in memory of the machine to save time.",
             "Memory Hierarchies in Computer Chess Programs.", "Memory is where a program keeps its data.",
             "Caches and memory are the topics of this page here."]  # fmt: skip
    pages = _pages(texts, ["Home", "Engine", "Paper", "Memory", "Caches"])
    at = texts[1].index("memory")
    candidates = pl.DataFrame(
        {"source": [1, 2, 4], "target": [3, 3, 3], "probability": [0.6, 0.7, 0.4],
         "origins": ["mention", "mention", "similar"], "mention_offset": [at, 0, None],
         "mention_words": [1.0, 1.0, None]}
    )  # fmt: skip
    existing = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "content": pl.Boolean})
    usable = sensible_candidates(
        pages, UrlTree(pages["path"].to_list()), np.full(5, -1), np.full(5, -1), candidates, existing,
        PlanOptions(), _sense(pages), False,
    )  # fmt: skip
    assert sorted(usable.select("source", "needs_sentence").rows()) == [(1, True), (4, False)]
    assert usable["tied"].all()  # without the site's links, nothing says two pages are not tied

    # with them, a pair takes an entry in the related links only where their links (shared neighbours:
    # the `graph` signal) or the URL tree (`hierarchy`) tie it, and the target's page links back to the
    # source in its content or returns no link at all; else the planner adds it only where the source's
    # text names the target
    def tied(*links: tuple[int, int, bool]) -> list[tuple[int, bool]]:
        known = sensible_candidates(
            pages, UrlTree(pages["path"].to_list()), np.full(5, -1), np.full(5, -1),
            candidates.with_columns(pl.Series("origins", ["mention", "hierarchy+mention", "graph+similar"])),
            pl.DataFrame(links, schema=existing.schema, orient="row"), PlanOptions(), _sense(pages), True,
        )  # fmt: skip
        return sorted(known.select("source", "tied").rows())

    # Memory's page links to no page that links to it: its silence about 2 and 4 says nothing
    assert tied((0, 3, True)) == [(1, False), (2, True), (4, True)]
    # it links back to the home page that links to it, but to neither 2 nor 4 (a menu's link is no editor's)
    returning = ((0, 3, True), (3, 0, True))
    assert tied(*returning, (3, 4, False)) == [(1, False), (2, False), (4, False)]
    assert tied(*returning, (3, 2, True)) == [(1, False), (2, True), (4, False)]
    linked = [(0, page, True) for page in range(1, 5)]
    untied = _site(5, candidates=[(2, 3, 0.6, "similar"), (4, 3, 0.4, "similar")], existing=linked)
    untied.candidates = untied.candidates.with_columns(pl.Series("tied", [False, True]))
    assert plan_links(untied, PlanOptions(hub_links=0))[0].select("source", "target").rows() == [(4, 3)]
    # a link that needs a sentence and ends up without one leaves the plan, its room given back
    site = _site(5, candidates=[(1, 3, 0.6, "mention"), (4, 3, 0.4, "similar")], existing=[(0, 1, True)])
    planned, planner = plan_links(site, PlanOptions(hub_links=0, max_inlinks=5))
    planned = planned.with_columns(
        pl.Series("needs_sentence", [s == 1 for s in planned["source"]]),
        pl.lit(0.5).alias("probability"),
        pl.lit(True).alias("tied"),
    )
    unplaceable = candidates.with_columns(pl.lit(None, dtype=pl.Int64).alias("mention_offset"))
    budget = int(planner.out_budget[1])
    rules = site_anchor_rules(pages, {}, "en")
    kept, anchored = placed_links(
        pages, planned, planner, unplaceable, PlanOptions(), {}, [-1] * 5, _sense(pages), rules
    )
    assert (1, 3) not in set(kept.select("source", "target").iter_rows())
    assert (4, 3) in set(kept.select("source", "target").iter_rows()) and anchored.placements == ["related"]
    assert planner.out_budget[1] == budget + 1 and (1, 3) not in planner.planned


def test_a_target_keeps_its_share_of_the_plan_that_stays():
    """max_target_share holds of the plan left once the links without a place leave it: the target past
    it keeps its most probable topical links, and their sources' room comes back."""
    n = 12
    pages = _pages(
        [f"Notes on topic number {i} of this site." for i in range(n)], [f"Topic {i}" for i in range(n)]
    )
    rows = [(s, 6, 0.5 + s / 100, "similar") for s in range(1, 6)] + [
        (s, 6 + s, 0.4, "similar") for s in range(1, 6)
    ]
    site = _site(n, candidates=rows, existing=[(0, page, True) for page in range(1, n)])
    planned, planner = plan_links(site, PlanOptions(hub_links=0, max_inlinks=5, max_target_share=0.5))
    into = planned.filter(pl.col("target") == 6).sort("score", descending=True)
    assert into.height >= 4 and planned.height > into.height  # within the planner's own share of 8 links
    planned = planned.with_columns(
        (pl.col("target") != 6).alias("needs_sentence"),
        pl.lit(0.5).alias("probability"),
        pl.lit(True).alias("tied"),
    )
    candidates = pl.DataFrame(
        rows, schema=["source", "target", "probability", "origins"], orient="row"
    ).with_columns(
        pl.lit(None, dtype=pl.Int64).alias("mention_offset"),
        pl.lit(None, dtype=pl.Float64).alias("mention_words"),
    )
    room = planner.out_budget.copy()
    kept, anchored = placed_links(
        pages, planned, planner, candidates, PlanOptions(max_target_share=0.5), {}, [-1] * n, _sense(pages),
        site_anchor_rules(pages, {}, "en"),
    )  # fmt: skip
    # the links that needed a sentence leave; of those into page 6, half of what stays may remain
    best = into.head(into.height // 2)
    assert sorted(kept.select("source", "target").rows()) == sorted(best.select("source", "target").rows())
    assert len(anchored.placements) == best.height == len(planner.links)
    # every link taken out gives its source's room back: those without a sentence and those past the share
    taken_out = np.bincount(planned["source"].to_numpy(), minlength=n) - np.bincount(
        kept["source"], minlength=n
    )
    assert (planner.out_budget - room == taken_out).all() and taken_out[into.tail(2)["source"]].min() >= 1


def test_a_structural_links_confidence_is_what_the_backtest_measured_of_its_kind():
    plan = pl.DataFrame(
        {"reason": ["topical", "topical", "orphan-rescue", "depth-shortcut", "hub", "component-bridge"],
         "probability": [0.5, 0.12, 0.01, 0.02, None, 0.5]},
        schema_overrides={"probability": pl.Float32},
    )  # fmt: skip
    # before any backtest: each band by its probability, said as such
    before = link_confidence(plan, MeasuredConfidence(), 0.1)
    assert before["confidence"].to_list() == ["high", "medium", "low", "low", "not scored", "high"]
    assert before["confidence_note"][0].startswith("high: probability at 3 times min_probability or more")
    assert before["confidence_note"].str.contains("no backtest has measured it yet").all()
    backtest = pl.DataFrame(
        {
            "ran_at": [datetime(2026, 1, 1)],
            "settings": [json.dumps({"plan": {"min_probability": 0.1}})],
            "precision_by_band": [json.dumps([
                {"band": "high", "links": 40, "hits": 12, "precision": 0.3},
                {"band": "medium", "links": 100, "hits": 15, "precision": 0.15},
                {"band": "low", "links": 50, "hits": 5, "precision": 0.1},
            ])],
            "precision_by_reason": [json.dumps([
                {"reason": "topical", "links": 140, "hits": 27, "known": 100, "precision": 0.19,
                 "known_precision": 0.27},
                # most rescues go to pages nobody ever linked: 52 of the 71 whose target lost a link
                {"reason": "orphan-rescue", "links": 438, "hits": 52, "known": 71, "precision": 0.12,
                 "known_precision": 52 / 71},
                {"reason": "depth-shortcut", "links": 30, "hits": 6, "known": 30, "precision": 0.2,
                 "known_precision": 0.2},
                {"reason": "hub", "links": 8, "hits": 0, "known": 2, "precision": 0.0,
                 "known_precision": 0.0},
            ])],
        }
    )  # fmt: skip
    after = link_confidence(plan, MeasuredConfidence.of(backtest), 0.1)
    # the rescues the backtest found right 73% of the time are not "low" for their probability; a kind it
    # did not measure (the bridge) keeps its probability's band; a hub is the site's structure, not scored
    assert after["confidence"].to_list() == ["high", "medium", "high", "medium", "not scored", "high"]
    assert after["confidence_note"][2] == (
        "high: 7 in 10 orphan rescue links were the editors' own in the backtest (52 of the 71 it could tell)"
    )
    assert (
        after["confidence_note"][0]
        == "high: 3 in 10 such links were the editors' own in the backtest (12 of 40)"
    )
    assert after.equals(link_confidence(plan, MeasuredConfidence.of(backtest), 0.1))  # the same every run
