"""Relevance: candidates from every signal, the ranker learned per site, the backtest and its honesty
(hidden links reach no feature), page text in, and the fallbacks a user meets."""

import dataclasses
import re
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.frames import owned
from interlink_pipeline.core.graph.link_plan import planner_without
from interlink_pipeline.core.graph.plan_inputs import read_plan_inputs
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.ingest.crawl_exports import read_page_text
from interlink_pipeline.core.ingest.inbox import export_kind, register_crawl
from interlink_pipeline.core.ingest.link_graph import LinkGraph, page_links
from interlink_pipeline.core.ml.ann_search import Approximate
from interlink_pipeline.core.ml.page_embeddings import field_vectors
from interlink_pipeline.core.relevance.backtest import (
    decisions_learned,
    links_to_hide,
    run_backtest,
    scored_by,
)
from interlink_pipeline.core.relevance.backtest_scores import baseline_lists, figures_by_reason
from interlink_pipeline.core.relevance.candidate_features import FEATURES, LINK_FEATURES
from interlink_pipeline.core.relevance.candidate_updates import (
    KEY,
    STORED,
    KeptCandidates,
    score_candidates,
    settings_hash,
)
from interlink_pipeline.core.relevance.intervals import ratio_intervals
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder, build_candidates
from interlink_pipeline.core.relevance.link_ranker import (
    RankerOptions,
    default_ranker,
    fit_ranker,
    negative_sample,
    training_examples,
)
from interlink_pipeline.core.relevance.ranker_inputs import (
    SiteState,
    drift,
    settings_fingerprint,
    site_state,
    still_fits,
)
from interlink_pipeline.core.relevance.site_inputs import relevance_inputs
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals
from interlink_pipeline.core.relevance.text_neighbours import NeighbourStore, rows_with_text
from interlink_pipeline.core.relevance.url_tree import UrlTree
from interlink_pipeline.core.warehouse.contract import empty_frame
from interlink_pipeline.core.warehouse.database import connect
from interlink_pipeline.core.warehouse.store import SpilledRows
from interlink_pipeline.defs.ml.embeddings import default_embedder
from interlink_pipeline.defs.relevance.ranker import CandidateSettings
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline_tests.helpers import (
    LIGHT,
    changed_light_crawl,
    failure_message,
    materialization_metadata,
    register_lightchiropractic,
    run_site,
    write_export,
)

UPSTREAM = ["raw_crawl", "raw_links", "raw_page_text", "pages", "page_embeddings", "serp_results",
            "similarity_pairs", "topic_clusters"]  # fmt: skip


# --- candidates on a site small enough to reason about --------------------------------------------------


def _toy_site():
    """/ (home), /boots/ with two boots below it, /guides/ with a guide whose text names a boot."""
    paths = ["/", "/boots/", "/boots/alpine-boot/", "/boots/trail-runner/", "/guides/", "/guides/fit/"]
    titles = ["Alpine Gear", "Boots", "Alpine Boot", "Trail Runner", "Guides", "How to Fit Boots"]
    body = [
        None,
        None,
        None,
        None,
        None,
        "Before a long hike, lace the Alpine Boot snugly and try trail shoes.",
    ]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(6, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    zeros = np.zeros_like(vectors)
    signals = SiteSignals(
        paths,
        {"title": titles, "h1": titles, "meta_description": [None] * 6, "body": body},
        {"title": vectors, "h1": vectors, "meta_description": zeros, "body": zeros},
        np.array([0, 1, 1, 1, 2, 2]),
        pl.DataFrame({"source": [4], "target": [5], "rank": [1]}),
    )
    # home links both sections in its content; /boots/ links the alpine boot in content and the trail
    # runner only in its sidebar; the guide's page and the home page are linked with "trail shoes"
    links = LinkGraph(
        source=np.array([0, 0, 1, 1, 0]),
        target=np.array([1, 4, 2, 3, 3]),
        content=np.array([True, True, True, False, True]),
        anchor=np.array(["Boots", "Guides", "Alpine Boot", "Trail Runner", "trail shoes"], dtype=object),
    )
    return signals, links


def test_the_same_slug_under_another_parent_is_a_template_twin():
    tree = UrlTree([
        "/", "/tx/austin/plans/aspen/", "/tx/austin/plans/birch/", "/al/huntsville/plans/aspen/",
        "/tx/austin/plans/", "/al/huntsville/plans/", "/aspen/",
    ])  # fmt: skip
    pairs = np.array([[1, 3], [1, 2], [4, 5], [1, 6], [0, 4]])
    relations = tree.relations(pairs[:, 0], pairs[:, 1])
    # the Aspen in Huntsville; the plans pages of two cities: twins. The Birch next door, an Aspen at
    # another depth, the home page: not
    assert relations["template_twin"].tolist() == [1, 0, 1, 0, 0]
    assert relations["is_sibling"][1] == 1 and relations["tree_distance"][0] == 8


def test_candidates_come_from_every_signal_with_every_score():
    signals, links = _toy_site()
    candidates = build_candidates(signals, links, CandidateOptions(neighbours_per_field=2))
    pairs = {(row["source"], row["target"]): row for row in candidates.iter_rows(named=True)}
    assert list(candidates.columns) == ["source", "target", "origins", *FEATURES, "mention_offset"]
    # existing in-content links are not candidates; a sidebar-only link may become one in the content
    assert (0, 1) not in pairs and (1, 2) not in pairs
    assert (1, 3) in pairs and pairs[(1, 3)]["navigation_link"] == 1 and pairs[(1, 3)]["is_child"] == 1
    # the URL hierarchy: parent and siblings
    assert pairs[(2, 1)]["is_parent"] == 1 and "hierarchy" in pairs[(2, 1)]["origins"]
    assert pairs[(2, 3)]["is_sibling"] == 1
    # the guide's text names the Alpine Boot (its title), and "trail shoes", an anchor others use for the
    # trail runner: both are mentions, with the phrase's place in the text
    text = signals.texts["body"][5]
    alpine = pairs[(5, 2)]
    assert "mention" in alpine["origins"] and alpine["mention_title"] == 1
    assert alpine["mention_offset"] == text.lower().index("alpine boot")
    runner = pairs[(5, 3)]
    assert runner["mention_commonness"] == 1.0 and runner["mention_title"] == 0
    assert runner["mention_offset"] == text.index("trail shoes")
    # SERP and the link graph: the guides page's SERP returned the guide; co-citation counts shared sources
    assert pairs[(4, 5)]["serp_score"] == 1.0 and "serp" in pairs[(4, 5)]["origins"]
    assert pairs[(1, 4)]["cocitation"] == 1  # the home page links both /boots/ and /guides/
    assert not candidates.filter(pl.col("source") == pl.col("target")).height


def test_page_links_keep_anchors_and_split_content_from_navigation(crawls):
    from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export, read_links_export
    from interlink_pipeline.core.ingest.pages import clean_pages

    pages = clean_pages(read_crawl_export(crawls / "lightchiropractic/internal_all.csv", LIGHT).frame, LIGHT)
    raw = read_links_export(crawls / "lightchiropractic/all_inlinks.csv", LIGHT).frame
    links = page_links(raw, pages.pages["url_key"])
    positions = raw["link_position"].str.to_lowercase().value_counts()
    assert 0 < links.content.sum() < len(links.source)  # both kinds, only between kept pages
    assert "content" in positions["link_position"].to_list()
    # 96 in-content pairs between kept pages, and 47 the blog index lists on its later pages (excluded)
    assert links.content_pairs().height == 96 + 47
    assert all(a is None or isinstance(a, str) for a in links.anchor)


def test_menus_and_paginated_listings_declare_the_sections(crawls):
    from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export, read_links_export
    from interlink_pipeline.core.ingest.pages import clean_pages

    pages = clean_pages(read_crawl_export(crawls / "lightchiropractic/internal_all.csv", LIGHT).frame, LIGHT)
    raw = read_links_export(crawls / "lightchiropractic/all_inlinks.csv", LIGHT).frame
    paths = pages.pages["path"].to_list()
    row = {p: i for i, p in enumerate(paths)}
    links = page_links(raw, pages.pages["url_key"])
    sections = links.sections
    menu = {(paths[p], paths[c]) for p, c in zip(sections.parent, sections.child, strict=True)}
    # the header menu nests the conditions under "Conditions Treated" (/treatment/), whatever their URLs
    assert {("/treatment/", "/conditions-pregnancy/"), ("/treatment/", "/treatment/neck-pain/"),
            ("/about/", "/faq/")} <= menu  # fmt: skip
    assert {p for p, _ in menu} == {"/treatment/", "/about/"}
    assert {"/treatment/", "/about/", "/chiropractor-prices-singapore/"} <= {
        paths[p] for p in sections.main_sections
    }
    # /blog/page/2/ .. /6/ are excluded pages; what they list, the blog index lists
    assert [paths[p] for p in sections.listings] == ["/blog/"]
    listed = set(links.target[links.content & (links.source == row["/blog/"])].tolist())
    page_two = raw.filter(
        pl.col("source_url").str.ends_with("/blog/page/2/") & (pl.col("link_position") == "Content")
    )["target_url"]
    older = {row[p] for p in page_two.str.replace("https://www.lightchiropractic.sg", "") if p in row} - {
        row["/blog/"]
    }
    assert len(older) > 5 and older <= listed


def test_a_nested_list_in_the_body_is_not_a_menu():
    from interlink_pipeline.core.ingest.site_sections import site_sections

    item = "//body/main/article/ul/li[2]"
    links = pl.DataFrame(
        {
            "source_url_key": ["h/a", "h/a", "h/b", "h/b"],
            "source_key": ["h/a", "h/a", "h/b", "h/b"],
            "target_key": ["h/x", "h/y", "h/x", "h/y"],
            "content": [True, True, False, False],
            "link_path": [f"{item}/a", f"{item}/ul/li[1]/a", "//body/nav/ul/li[1]/a",
                          "//body/nav/ul/li[1]/ul/li[3]/a"],
        }
    )  # fmt: skip
    rows = {"h/a": 0, "h/b": 1, "h/x": 2, "h/y": 3}
    sections = site_sections(links.filter(pl.col("content")), rows)
    assert not len(sections.parent) and not len(sections.main_sections)
    sections = site_sections(links, rows)  # the same nesting in navigation is the site's structure
    assert sections.parent.tolist() == [2] and sections.child.tolist() == [3]
    assert sections.main_sections.tolist() == [2] and not len(sections.listings)


# --- a real site through the assets, then the core's honesty ---------------------------------------------


@pytest.fixture(scope="session")
def light_inputs(light_and_nutri, tmp_path_factory):
    """lightchiropractic's relevance and plan inputs, read off a copy of its warehouse (the text vectors
    the candidates need go into the copy's embedding cache)."""
    site = light_and_nutri.phases["upstream"].copy(tmp_path_factory.mktemp("light"))
    warehouse = Warehouse(path=str(site.warehouse))
    encoder = default_embedder().for_site(warehouse.path, LIGHT)
    inputs = relevance_inputs(warehouse, LIGHT, encoder.identity().model_id, encoder.encoder)
    return warehouse, inputs, read_plan_inputs(warehouse, LIGHT, encoder)


def _backtest(inputs, visible, hiding, base, ranker_options, decided=None):
    """A backtest of the site from the `visible` links, scored on what `hiding` hides of its links, with
    its planning asserting on the way that the hidden links were never shown to it."""
    hidden = hiding.scored(inputs.links)
    plan = planner_without(base, hidden, hiding.orphaned, PlanOptions())

    def checked(shown, candidates):
        assert not shown.content_pairs().join(hidden, on=["source", "target"]).height
        assert not np.isin(shown.target, hiding.orphaned).any()
        return plan(shown, candidates)

    return run_backtest(
        inputs.signals, visible, hidden, hiding.orphaned, checked, CandidateSettings().options(),
        ranker_options, decided=decided,
    )  # fmt: skip


def test_a_text_field_no_page_has_is_zero_rows_without_text(light_inputs):
    """lightchiropractic has no page text: its body vectors are zero rows, as any page's empty field, and
    no page counts as having body text when neighbours are searched."""
    _, inputs, _ = light_inputs
    body, title = inputs.signals.vectors["body"], inputs.signals.vectors["title"]
    assert not any(inputs.signals.texts["body"]) and all(inputs.signals.texts["title"])
    assert body.shape == title.shape and not body.any()
    assert len(rows_with_text(body)) == 0 and len(rows_with_text(title)) == inputs.signals.n


def test_reading_the_cached_vectors_leaves_the_warehouses_memory_limit_as_it_was(light_inputs):
    """The vectors stream out of the cache under a small DuckDB memory limit, which is the database's: a
    connection to the file held open meanwhile keeps its limit after the read."""
    warehouse, inputs, _ = light_inputs

    def no_encoder():
        raise AssertionError("every text is cached: nothing to embed")

    model_id = default_embedder().for_site(warehouse.path, LIGHT).identity().model_id
    with connect(warehouse.path) as held:
        before = held.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        vectors, _ = field_vectors(warehouse.path, model_id, inputs.signals.texts, no_encoder)
        assert held.execute("SELECT current_setting('memory_limit')").fetchone()[0] == before
    assert all(np.array_equal(vectors[name], inputs.signals.vectors[name]) for name in vectors)


def test_sampled_training_sources_keep_the_features_they_would_have_had(light_inputs):
    """A site of more pages than training_sources gets its pairs proposed and featured for a seeded sample
    of that many sources only (the same sample under the same seed, another under another), and those rows
    are exactly the full examples' rows of the same sources."""
    _, inputs, _ = light_inputs
    builder = CandidateBuilder(inputs.signals, CandidateOptions())
    full = training_examples(builder, inputs.links, RankerOptions())
    third = RankerOptions(training_sources=inputs.signals.n // 3)
    sampled = training_examples(builder, inputs.links, third)
    assert sampled["source"].n_unique() <= inputs.signals.n // 3 < full["source"].n_unique()
    same_sources = full.filter(pl.col("source").is_in(sampled["source"].unique().implode()))
    keys = ["fold", "source", "target"]
    assert_frame_equal(sampled.sort(keys), same_sources.sort(keys))
    assert_frame_equal(training_examples(builder, inputs.links, third), sampled)
    other = training_examples(builder, inputs.links, dataclasses.replace(third, seed=1))
    assert set(other["source"].unique()) != set(sampled["source"].unique())


def test_candidates_built_a_chunk_of_sources_at_a_time_are_those_built_at_once(light_inputs, monkeypatch):
    """Features computed a few source pages at a time, and probabilities scored a few rows at a time, give
    the frame and the scores of the whole site at once, and so do a chunk's scores kept without its
    features (the backtest's): chunking bounds memory, never the result."""
    import interlink_pipeline.core.relevance.link_ranker as link_ranker

    _, inputs, _ = light_inputs
    builder = CandidateBuilder(inputs.signals, CandidateOptions())
    proposals = builder.proposals(inputs.links)
    whole = builder.features(proposals, chunk=inputs.signals.n)
    for chunk in (7, 50):
        assert_frame_equal(builder.features(proposals, chunk=chunk), whole)
    ranker = default_ranker("the development crawls' weights", links_known=True)
    at_once = ranker.probability(whole)
    scores_only = builder.features(proposals, chunk=7, each=scored_by(ranker))
    kept = ("source", "target", "origins", "mention_offset", "mention_words")  # what the plan reads
    expected = whole.select(kept).with_columns(pl.Series("probability", at_once))
    assert_frame_equal(scores_only, expected)
    monkeypatch.setattr(link_ranker, "SCORING_ROWS", 333)
    assert whole.height > 3 * 333
    np.testing.assert_array_equal(ranker.probability(whole), at_once)


def test_candidates_updated_a_chunk_of_sources_at_a_time_patch_the_last_build_into_a_full_one(
    light_inputs, tmp_path, monkeypatch
):
    """After a re-crawl drops three in-content links of one page and adds two that were candidates, the
    update from the last build, a few source pages at a time (the last rows read per chunk, the rows that
    differ spilled), patches it into exactly the full build of the new links: the linked pairs are
    deleted, and most rows are not written. (On a site this small the change touches more pages than
    a large site's update is taken for; the share is lifted so that it is.)"""
    import interlink_pipeline.core.relevance.candidate_updates as candidate_updates

    monkeypatch.setattr(candidate_updates, "FULL_BUILD_SHARE", 1.0)
    _, inputs, _ = light_inputs
    builder = CandidateBuilder(inputs.signals, CandidateOptions())
    ids = inputs.pages["page_id"]
    probability = default_ranker("the development crawls' weights", links_known=True).probability
    settings = settings_hash(builder, "a model")

    def built(links, chunk, kept=None):
        with SpilledRows("ml.link_candidates", LIGHT, tmp_path) as spilled:
            scored = score_candidates(
                builder, links, ids, probability, "run 1", settings, spilled, kept, chunk
            )
            files = spilled.files
            rows = pl.read_parquet(files) if files else empty_frame("ml.link_candidates")
            return scored, rows.drop("site")

    first, stored = built(inputs.links, chunk=inputs.signals.n)
    content = np.flatnonzero(inputs.links.content)
    dropped = content[inputs.links.source[content] == inputs.links.source[content[0]]][:3]
    linked = stored.filter(pl.col("rank") == 1).head(2)
    row = {page_id: i for i, page_id in enumerate(ids)}
    added = [np.array([row[p] for p in linked[c]]) for c in KEY]
    links = inputs.links.subset(~np.isin(np.arange(len(inputs.links.source)), dropped))
    links = dataclasses.replace(
        links,
        source=np.concatenate([links.source, added[0]]),
        target=np.concatenate([links.target, added[1]]),
        content=np.concatenate([links.content, [True, True]]),
        anchor=np.concatenate([links.anchor, np.array([None, None], dtype=object)]),
    )

    def rows_from(sources):
        return stored.filter(pl.col("source_page_id").is_in(sources.implode())).select(*KEY, *STORED)

    update, upserted = built(links, chunk=7, kept=KeptCandidates(first.pages, rows_from))
    assert update.mode == "incremental" and len(dropped) == 3
    assert update.write.deleted.join(linked, on=list(KEY)).height == 2
    patched = pl.concat(
        [stored.join(update.write.deleted, on=list(KEY), how="anti").join(upserted, on=list(KEY), how="anti"),
         upserted]
    )  # fmt: skip
    _, rebuilt = built(links, chunk=50)
    assert_frame_equal(patched.sort(KEY), rebuilt.sort(KEY))
    assert 0 < upserted.height < rebuilt.height / 2
    assert update.summary.candidates == rebuilt.height
    # the removed keys, kept across the chunks, hold their own rows' memory, not the rows read per chunk
    assert _buffer_bytes(update.write.deleted) <= 100 * update.write.deleted.height + 1024


def _buffer_bytes(frame: pl.DataFrame) -> int:
    """The bytes of every buffer a frame's columns reference (a cut of a larger frame references its)."""
    table = frame.to_arrow(compat_level=pl.CompatLevel.newest())
    return sum(b.size for column in table.columns for part in column.chunks for b in part.buffers() if b)


def test_a_few_rows_kept_from_a_large_frame_hold_only_their_own_memory():
    large = pl.DataFrame(
        {"page_id": [f"{i:016x}" for i in range(200_000)], "probability": np.linspace(0, 1, 200_000)}
    )
    cuts = {
        "most probable": large.sort("probability", descending=True).head(15),
        "filtered": large.filter(pl.col("probability") < 1e-4),
        "joined": large.join(large.tail(5), on="page_id", how="semi"),
    }
    for name, cut in cuts.items():
        assert _buffer_bytes(cut) > 1_000_000, name  # what a cut holds: the large frame's buffers
        kept = owned(cut)
        assert_frame_equal(kept, cut)
        assert _buffer_bytes(kept) <= 100 * kept.height + 1024, name


def test_adamic_adar_is_the_same_a_block_of_pages_at_a_time(light_inputs, monkeypatch):
    """The graph proposals, computed a few pages' Adamic–Adar rows at a time (and for a mask of pages),
    are the whole score matrix's best pairs, and the feature is the matrix's entry for every pair."""
    from scipy import sparse

    import interlink_pipeline.core.relevance.link_signals as link_signals

    _, inputs, _ = light_inputs
    content = inputs.links.adjacency(inputs.signals.n, content=True)
    both, weight = link_signals.adamic_adar_weights(content)
    scores = sparse.csr_matrix(both @ sparse.diags(weight) @ both)
    whole = link_signals.top_pairs(scores, 5)
    assert whole.height > 100
    monkeypatch.setattr(link_signals, "AA_BLOCK_ROWS", 7)
    assert_frame_equal(link_signals.adamic_adar_top(both, weight, 5), whole)
    some = np.arange(inputs.signals.n) % 3 == 1
    expected = whole.filter(pl.col("source") % 3 == 1)
    assert_frame_equal(link_signals.adamic_adar_top(both, weight, 5, some), expected)
    builder = CandidateBuilder(inputs.signals, CandidateOptions())
    candidates = builder.build(inputs.links)
    s, t = candidates["source"].to_numpy(), candidates["target"].to_numpy()
    np.testing.assert_allclose(  # summed in another order: equal to float32's last bit
        candidates["adamic_adar"].to_numpy(), np.asarray(scores[s, t]).ravel(), rtol=1e-6
    )
    assert (candidates["adamic_adar"] > 0).sum() > 100


def test_decisions_are_weighted_examples_and_never_about_hidden_links(light_inputs):
    """Editors' decisions in the ranker's examples: accepted pairs positives, rejected ones negatives, both
    weighted, in place of their simulated rows, a pair no signal proposes included; a backtest learns from
    none about a hidden link (accepting one would tell the ranker the answer) and measures the plan
    without them too; a new decision is a new model."""
    _, inputs, base = light_inputs
    home = int(inputs.pages["is_home"].arg_max())
    hiding = links_to_hide(inputs.links, 0.3, seed=3, orphan_fraction=0.1, home=home)
    hidden, visible = hiding.scored(inputs.links), hiding.visible(inputs.links)
    builder = CandidateBuilder(inputs.signals, CandidateSettings().options())
    proposed = builder.proposals(visible).pairs.join(hidden, on=["source", "target"], how="anti")
    taken = set(zip(inputs.links.source.tolist(), inputs.links.target.tolist(), strict=True))
    taken |= set(proposed.select("source", "target").rows())
    n = inputs.signals.n
    unproposed = [(s, t) for s in range(n) for t in range(n) if s != t and (s, t) not in taken][:3]
    pairs = [
        *hidden.select("source", "target").head(4).rows(),
        *proposed.select("source", "target").head(6).rows(),
    ]
    decided = pl.DataFrame(
        [*pairs, *unproposed], schema={"source": pl.Int64, "target": pl.Int64}, orient="row"
    ).with_columns(pl.Series("decision", ["accept"] * 4 + ["reject"] * 6 + ["accept"] * 3))
    learned = decisions_learned(decided, hidden, RankerOptions())
    assert learned.height == 9 and not learned.join(hidden, on=["source", "target"]).height
    only_rejections = decisions_learned(decided, hidden, RankerOptions(accepted_weight=0))
    assert set(only_rejections["decision"]) == {"reject"} and only_rejections.height == 6

    options = RankerOptions(accepted_weight=4.0, rejected_weight=2.0)
    examples = training_examples(builder, visible, options, learned)
    from_editors = examples.filter(pl.col("fold") == -1).sort("source", "target")
    assert from_editors.select("source", "target", "label", "weight").rows() == sorted(
        (s, t, int(d == "accept"), 4.0 if d == "accept" else 2.0) for s, t, d in learned.rows()
    )
    assert not examples.filter(pl.col("fold") >= 0).join(learned, on=["source", "target"]).height
    assert set(examples.filter(pl.col("fold") >= 0)["weight"]) == {1.0}
    ignored = RankerOptions(accepted_weight=0, rejected_weight=0)
    simulated = training_examples(builder, visible, ignored)
    assert_frame_equal(training_examples(builder, visible, ignored, learned), simulated)
    # a decision is an example like a link: it moves the site's state, and the model is fitted again once
    # the decisions and the site's changes add up to more than refit_above
    ids = inputs.pages["page_id"]
    settings = settings_fingerprint(CandidateSettings().options(), options, "m")
    before, after = (site_state(ids, inputs.signals, visible, d) for d in (None, learned))
    moved = drift(before, after)[1]
    assert moved > 0
    assert still_fits(("a", settings, before), ("b", settings, after), moved * 2)[0]
    assert not still_fits(("a", settings, before), ("b", settings, after), moved / 2)[0]

    result = _backtest(inputs, visible, hiding, base, RankerOptions(), decided)
    assert result.figures["decisions_learned"] == 9
    assert 0 <= result.figures["plan_precision_without_decisions"] <= 1


def test_hidden_links_reach_no_feature(light_inputs):
    """What a backtest builds from a site with hidden links equals what it builds from an export that never
    had them: the hidden links enter the scoring and nothing else."""
    warehouse, inputs, base = light_inputs
    home = int(inputs.pages["is_home"].arg_max())
    hiding = links_to_hide(inputs.links, 0.3, seed=3, orphan_fraction=0.1, home=home)
    hidden = hiding.scored(inputs.links)
    assert hidden.height > 20 and len(hiding.orphaned) >= 3
    # the orphans lose every in-link, navigation included; nothing else loses one outside the sample
    orphaned = pl.Series(hiding.orphaned).implode()
    assert (
        hidden.filter(pl.col("target").is_in(orphaned)).height
        > hiding.pairs.filter(pl.col("target").is_in(orphaned)).height
    )
    # the same site exported without the hidden in-content links, read through the same reader
    from interlink_pipeline.core.urls import url_parts

    keys = inputs.pages["url_key"]
    hidden_keys = hidden.select(
        pl.Series("source_key", keys.gather(hidden["source"])),
        pl.Series("target_key", keys.gather(hidden["target"])),
    ).with_columns(pl.lit(True).alias("hidden"))
    orphan_keys = keys.gather(hiding.orphaned).implode()
    raw = warehouse.read_site("raw.crawl_links", LIGHT)
    source = url_parts(raw["source_url"])
    flagged = raw.with_columns(
        # a link on a listing's page 2+ is a link of its first page (/blog/page/2/ -> /blog/)
        source.select(
            pl.when(pl.col("url_key").is_in(keys.implode())).then("url_key").otherwise("series_key")
        )["url_key"].alias("source_key"),
        url_parts(raw["target_url"])["url_key"].alias("target_key"),
    ).join(hidden_keys, on=["source_key", "target_key"], how="left", maintain_order="left")
    in_content = ~pl.col("link_position").str.to_lowercase().is_in(
        ["header", "footer", "navigation", "sidebar"]
    )
    hidden_sampled = pl.col("hidden").fill_null(False) & in_content
    export_without = flagged.filter(~hidden_sampled & ~pl.col("target_key").is_in(orphan_keys)).drop(
        "source_key", "target_key", "hidden"
    )
    assert export_without.height < raw.height
    never_had = page_links(export_without, keys)
    options = CandidateSettings().options()
    assert build_candidates(inputs.signals, hiding.visible(inputs.links), options).equals(
        build_candidates(inputs.signals, never_had, options)
    )
    ranker_options = RankerOptions(min_positives=10)
    shown = _backtest(inputs, hiding.visible(inputs.links), hiding, base, ranker_options)
    unshown = _backtest(inputs, never_had, hiding, base, ranker_options)
    assert shown.figures == unshown.figures
    assert shown.figures["plan_links"] > 0 and shown.figures["orphan_rescues"] > 0


def test_the_backtest_repeats_under_a_seed(light_inputs):
    _, inputs, base = light_inputs
    home = int(inputs.pages["is_home"].arg_max())
    first = links_to_hide(inputs.links, 0.2, seed=7, orphan_fraction=0.1, home=home)
    again = links_to_hide(inputs.links, 0.2, seed=7, orphan_fraction=0.1, home=home)
    other = links_to_hide(inputs.links, 0.2, seed=8, orphan_fraction=0.1, home=home)
    assert first.pairs.equals(again.pairs) and (first.orphaned == again.orphaned).all()
    assert not first.pairs.equals(other.pairs)
    runs = [_backtest(inputs, first.visible(inputs.links), first, base, RankerOptions()) for _ in range(2)]
    assert runs[0].figures == runs[1].figures and runs[0].intervals == runs[1].intervals
    assert runs[0].by_reason.equals(runs[1].by_reason)
    for figure, (low, high) in runs[0].intervals.items():  # every share has one, and holds its figure
        assert low <= runs[0].figures[figure] <= high, figure
    assert set(runs[0].intervals) >= {"plan_precision", "baseline_precision", "orphan_rescue_precision"}
    for row in runs[0].by_reason.iter_rows(named=True):
        assert row["precision_low"] <= row["precision"] <= row["precision_high"], row


def test_an_interval_holds_its_figure_and_narrows_as_pages_are_added():
    """A bootstrap over pages: the same under a seed whatever the rows' order, around the figure, narrower
    on ten times the pages, and None where no page has a denominator."""
    rng = np.random.default_rng(0)
    links = rng.integers(1, 12, 60)
    counts = pl.DataFrame(
        {"source": np.arange(60), "links": links, "hits": rng.binomial(links, 0.3), "none": 0}
    )
    ratios = {"precision": ("hits", "links"), "nothing": ("hits", "none")}
    interval = ratio_intervals(counts, "source", ratios, seed=3)
    assert interval == ratio_intervals(counts.sample(fraction=1.0, shuffle=True, seed=1), "source", ratios, 3)
    assert interval["nothing"] is None
    low, high = interval["precision"]
    assert low < counts["hits"].sum() / counts["links"].sum() < high
    tenfold = pl.concat([counts.with_columns(pl.col("source") + 60 * i) for i in range(10)])
    wide_low, wide_high = ratio_intervals(tenfold, "source", ratios, seed=3)["precision"]
    assert (wide_high - wide_low) < (high - low) / 2


def test_a_structural_link_is_held_against_the_sources_it_could_have_had():
    """Page 5 lost its link from page 0, within reach; page 6 only from page 7, too deep to give a depth
    shortcut: the shortcut into 6 cannot be right, and counts among the known links but not the reachable."""
    planned = pl.DataFrame(
        {"source": [0, 1, 2], "target": [5, 6, 8], "reason": ["depth-shortcut"] * 2 + ["topical"],
         "probability": [0.3, 0.2, 0.5]}
    )  # fmt: skip
    hidden = pl.DataFrame({"source": [0, 7, 3], "target": [5, 6, 9]})
    reach = np.array([True] * 5 + [False] * 5)
    rows = {row["reason"]: row for row in figures_by_reason(planned, hidden, reach).iter_rows(named=True)}
    shortcut = rows["depth-shortcut"]
    assert (shortcut["links"], shortcut["hits"], shortcut["known"], shortcut["reachable"]) == (2, 1, 2, 1)
    assert shortcut["precision"] == 0.5 and shortcut["known_precision"] == 0.5
    assert shortcut["reachable_precision"] == 1.0 and shortcut["recall"] == 1 / 3
    topical = rows["topical"]
    assert (topical["hits"], topical["known"], topical["reachable"]) == (0, 0, 0)
    assert topical["known_precision"] is None and topical["reachable_precision"] is None


def test_baseline_lists_are_each_pages_most_similar_whatever_its_links():
    """The title baseline: each page's `depth` most similar pages without itself and its in-content links,
    equally similar pages in target order, found by searching each page only as deep as its links need
    (a page with many links does not deepen every page's search) and equal to a brute-force ranking. (A
    group of identical titles larger than a page's search is cut where the search cuts it.)"""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors[100:108] = vectors[5]  # eight more pages with page 5's title: ties
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    hub_targets = np.arange(1, 250)  # page 0 links 249 pages in content, page 7 three, page 9 nothing
    source = np.concatenate([np.zeros(len(hub_targets), dtype=np.int64), [7, 7, 7, 9]])
    target = np.concatenate([hub_targets, [100, 101, 5, 8]])
    content = np.concatenate([np.ones(len(hub_targets) + 3, dtype=bool), [False]])
    links = LinkGraph(source=source, target=target, content=content, anchor=np.full(len(source), None))
    baseline = baseline_lists(vectors, links, depth=12)
    lists, searched = baseline.lists, baseline.search
    cosines = vectors @ vectors.T
    linked = set(zip(source[content].tolist(), target[content].tolist(), strict=True))
    for page in (0, 7, 9, 5, 103):
        ranked = sorted(
            (t for t in range(300) if t != page), key=lambda t: (-round(float(cosines[page, t]), 5), t)
        )
        expected = [t for t in ranked if (page, t) not in linked][:12]
        assert lists.filter(pl.col("source") == page).sort("position")["target"].to_list() == expected
        assert baseline.closest[page] == ranked[0]  # an orphan's baseline source, links aside (5's: 100)
    assert lists.group_by("source").len()["len"].unique().to_list() == [12]
    assert searched.method == "exact" and searched.described() == "exact"
    # past `above` pages the narrow searches come from the checked HNSW graph: lists as similar, position
    # by position, here (of identical titles the graph may keep others where a list cuts them)
    approximate = baseline_lists(vectors, links, depth=12, approximate=Approximate(above=100))
    searched = approximate.search
    assert searched.method.startswith("ann:HNSW") and searched.recall_at_k == 1.0
    assert searched.described() == f"{searched.method}, recall 1.000 on 300 pages"
    assert_frame_equal(approximate.lists.drop("target"), lists.drop("target"), abs_tol=1e-5)


def test_validation_fits_keep_every_positive_and_sample_the_negatives():
    """A validation fit sees every positive and `per_positive` negatives for each (the same rows under the
    same seed); the kept model is fitted on every example, its probabilities what they would be without
    the sampling."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20_000, 2))
    y = (rng.random(20_000) < 1 / (1 + np.exp(6 - 2 * x[:, 0]))).astype(np.int8)  # about 1% positive
    rows = negative_sample(y, 10, (0, 0))
    assert set(np.flatnonzero(y == 1)) <= set(rows) and (y[rows] == 0).sum() == 10 * y.sum()
    assert np.array_equal(rows, negative_sample(y, 10, (0, 0)))
    assert not np.array_equal(rows, negative_sample(y, 10, (1, 0)))
    assert np.array_equal(negative_sample(y, 10_000, (0, 0)), np.arange(len(y)))  # fewer: all of them

    examples = pl.DataFrame({name: np.zeros(len(y), dtype=np.float32) for name in FEATURES}).with_columns(
        pl.Series(FEATURES[0], x[:, 0].astype(np.float32)),
        pl.Series(FEATURES[1], x[:, 1].astype(np.float32)),
        pl.Series("label", y),
        pl.Series("source", np.arange(len(y)) % 500),
        pl.Series("fold", np.zeros(len(y), dtype=np.int32)),
    )
    sampled = fit_ranker(examples, RankerOptions(model="logistic", negatives_per_positive=10))
    whole = fit_ranker(examples, RankerOptions(model="logistic", negatives_per_positive=10_000))
    assert np.array_equal(sampled.probability(examples), whole.probability(examples))
    assert sampled.probability(examples).mean() == pytest.approx(y.mean(), rel=0.05)
    assert sampled.validation != whole.validation
    assert sampled.validation["logistic_average_precision"] == pytest.approx(
        whole.validation["logistic_average_precision"], abs=0.02
    )


def test_too_few_links_fall_back_to_the_default_weights(light_inputs):
    _, inputs, _ = light_inputs
    options = CandidateSettings().options()
    examples = training_examples(CandidateBuilder(inputs.signals, options), inputs.links, RankerOptions())
    positives = int(examples["label"].sum())
    fallback = fit_ranker(examples, RankerOptions(min_positives=positives + 1))
    assert fallback.kind == "default" and fallback.validation == {}
    assert f"{positives} positive examples" in fallback.reason
    assert "default weights fitted on the development crawls" in fallback.reason
    assert "fitted on hugodocs and sample" in fallback.reason
    own = fit_ranker(examples, RankerOptions(min_positives=1, model="logistic"))
    assert own.kind == "logistic" and 0 < own.validation["logistic_average_precision"] <= 1
    scored = build_candidates(inputs.signals, inputs.links, options)
    probability = fallback.probability(scored)
    assert probability.min() >= 0 and probability.max() <= 1
    # a site without a links export: ranked by weights fitted without the link features, so whatever
    # they hold changes nothing, and the ranker says so
    unlinked = fit_ranker(examples, RankerOptions(min_positives=positives + 1), links_known=False)
    assert "no links export: weights fitted without the link features" in unlinked.reason
    no_link_values = scored.with_columns(pl.lit(0.0, dtype=pl.Float32).alias(f) for f in LINK_FEATURES)
    assert np.allclose(unlinked.probability(scored), unlinked.probability(no_link_values))
    assert not np.allclose(fallback.probability(scored), fallback.probability(no_link_values))


def test_ranker_and_candidates_assets_say_what_they_did(light_and_nutri, instance, crawls, tmp_path):
    site = light_and_nutri.phases["upstream"].copy(tmp_path / "site")
    warehouse_path, inbox_root = site.warehouse, site.inbox
    config = {"ops": {"link_ranker": {"config": {"min_positives": 5}}}}
    result = run_site(
        warehouse_path,
        inbox_root,
        instance,
        LIGHT,
        steps=["link_ranker", "link_candidates"],
        run_config=config,
    )
    assert result.success
    ranker = materialization_metadata(result, "link_ranker")
    assert ranker["model"] in {"gradient_boosting", "logistic"}
    assert "cross-validated average precision" in ranker["why"]
    assert ranker["feature_weights"].columns == ["feature", "weight"]
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        runs = con.execute("SELECT model, positive_examples, model_path FROM ml.link_ranker_runs").fetchall()
        candidates = con.execute("SELECT * FROM ml.link_candidates").pl()
    assert len(runs) == 1 and runs[0][1] >= 5
    assert candidates["probability"].is_between(0, 1).all()
    assert (candidates.group_by("source_page_id").agg(pl.col("rank").min())["rank"] == 1).all()
    meta = materialization_metadata(result, "link_candidates")
    assert meta["candidates"] == candidates.height and "hierarchy" in meta["by_origin"]["origins"].to_list()
    assert ranker["reused"] is False and ranker["fitted_in_run"] == result.run_id

    # unchanged inputs: the kept model is reused; retrain fits again; an unreadable file is replaced
    again = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["link_ranker"], run_config=config)
    reused = materialization_metadata(again, "link_ranker")
    assert reused["reused"] is True and reused["fitted_in_run"] == result.run_id
    assert reused["reused_or_fitted_because"] == "its inputs are unchanged"
    retrain = {"ops": {"link_ranker": {"config": {"min_positives": 5, "retrain": True}}}}
    refit = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["link_ranker"], run_config=retrain)
    assert materialization_metadata(refit, "link_ranker")["reused"] is False
    model_file = Path(runs[0][2])
    model_file.write_bytes(b"not a model")
    broken = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["link_candidates"])
    assert not broken.success
    assert "cannot be read" in failure_message(broken) and str(model_file) in failure_message(broken)
    with duckdb.connect(str(warehouse_path), read_only=True) as con:  # the candidates are still there
        assert con.execute("SELECT count(*) FROM ml.link_candidates").fetchone()[0] == candidates.height
    repaired = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["link_ranker"], run_config=config)
    assert materialization_metadata(repaired, "link_ranker")["reused"] is False
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        fitted_in = dict(con.execute("SELECT run_id, fitted_in_run FROM ml.link_ranker_runs").fetchall())
    assert fitted_in == {
        result.run_id: result.run_id,
        again.run_id: result.run_id,
        refit.run_id: refit.run_id,
        repaired.run_id: repaired.run_id,
    }

    # a re-crawl without one page: the site moved by less than refit_above, so the model is kept; with
    # refit_above 0 any change fits it again
    register_lightchiropractic(inbox_root, crawls, changed_light_crawl(crawls, tmp_path))
    recrawled = run_site(
        warehouse_path, inbox_root, instance, LIGHT, steps=[*UPSTREAM, "link_ranker"], run_config=config
    )
    kept = materialization_metadata(recrawled, "link_ranker")
    assert kept["reused"] is True and kept["fitted_in_run"] == repaired.run_id
    assert re.fullmatch(
        r"\d\.\d% of the pages and \d\.\d% of the in-content links and decisions changed since "
        r"\(kept up to 5%\)",
        kept["reused_or_fitted_because"],
    ), kept["reused_or_fitted_because"]
    strict = {"ops": {"link_ranker": {"config": {"min_positives": 5, "refit_above": 0.0}}}}
    refitted = materialization_metadata(
        run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["link_ranker"], run_config=strict),
        "link_ranker",
    )
    assert refitted["reused"] is False and "more than 0%" in refitted["reused_or_fitted_because"]


def test_a_model_still_fits_a_site_that_moved_little():
    pages = pl.DataFrame({"page_id": [f"p{i}" for i in range(100)], "fingerprint": list(range(100))})
    links = np.arange(200, dtype=np.uint64)
    before = SiteState(pages, links)
    moved = SiteState(
        pages.with_columns(
            pl.when(pl.col("fingerprint") < 3).then(-1).otherwise("fingerprint").alias("fingerprint")
        )
        .filter(pl.col("page_id") != "p99")
        .vstack(pl.DataFrame({"page_id": ["new"], "fingerprint": [7]})),
        np.arange(2, 204, dtype=np.uint64),
    )
    assert drift(before, before) == (0.0, 0.0)
    assert drift(before, moved) == pytest.approx((0.05, 6 / 202))  # 3 changed, 1 gone, 1 new; 2 + 4 links
    assert still_fits(("a", "s", before), ("a", "s", moved), 0.0) == (True, "its inputs are unchanged")
    fits, why = still_fits(("a", "s", before), ("b", "s", moved), 0.05)
    assert (
        fits
        and why
        == "5.0% of the pages and 3.0% of the in-content links and decisions changed since (kept up to 5%)"
    )
    assert not still_fits(("a", "s", before), ("b", "s", moved), 0.04)[0]
    assert still_fits(("a", "s", before), ("b", "t", before), 1.0) == (
        False,
        "the features, settings or embedding model changed",
    )
    assert not still_fits(("a", "s", None), ("b", "s", before), 1.0)[0]


def test_kept_text_neighbours_follow_a_recrawl_exactly(tmp_path):
    """The candidates' text neighbours, updated for a re-crawl (some texts changed, one page gone, one
    new), equal a search from scratch of the final pages; an unchanged site searches nothing."""
    rng = np.random.default_rng(3)

    def unit(rows):
        vectors = rng.normal(size=(rows, 16)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    ids = [f"p{i}" for i in range(300)]
    vectors, texts = unit(300), [f"title {i}" for i in range(300)]
    vectors[5] = 0.0  # a page without the field
    texts[5] = None
    kept = NeighbourStore(tmp_path / "kept", ids, "model-a")
    kept.search("title", vectors, texts, k=4)
    assert kept.search("title", vectors, texts, k=4).pages_searched == 0

    changed = [2, 40, 41, 250]
    vectors[changed] = unit(len(changed))
    texts = [f"title {i} new" if i in changed else t for i, t in enumerate(texts)]
    final_ids = [*ids[1:], "p-new"]  # p0 gone, p-new added at the end
    final_vectors = np.vstack([vectors[1:], unit(1)])
    final_texts = [*texts[1:], "a new page"]
    recrawl = NeighbourStore(tmp_path / "kept", final_ids, "model-a")
    increment = recrawl.search("title", final_vectors, final_texts, k=4)
    assert increment.mode == "incremental" and increment.pages_changed == len(changed) + 1
    fresh = NeighbourStore(tmp_path / "fresh", final_ids, "model-a")
    assert fresh.search("title", final_vectors, final_texts, k=4).mode == "full"
    updated, expected = recrawl.matrix("title", 4), fresh.matrix("title", 4)
    assert updated.nnz == expected.nnz == 299 * 5  # k + 1 neighbours of each page with a title
    assert ((updated != 0) != (expected != 0)).nnz == 0  # the same neighbours
    assert abs(updated - expected).max() < 1e-6  # scores up to float rounding of another block shape
    assert updated[4].nnz == 0  # the page without a title has no neighbours and is nobody's


def test_a_backtest_stands_while_the_site_barely_changes(light_and_nutri, instance, crawls, tmp_path):
    """A re-crawl that moves the site by less than remeasure_above keeps the last measurement (recorded
    again for this run, saying whose it is and why); remeasure_above 0 measures again."""
    site = light_and_nutri.folder.copy(tmp_path / "site")  # measured once, by the site's first run
    warehouse_path, inbox_root = site.warehouse, site.inbox
    chain = [*UPSTREAM, "link_ranker", "link_candidates", "link_plan", "link_backtest"]
    first = light_and_nutri.for_site(LIGHT).run_of("link_backtest")
    assert first.success
    measured = materialization_metadata(first, "link_backtest")
    assert measured["why"] == "measured: no earlier backtest of this site"
    register_lightchiropractic(inbox_root, crawls, changed_light_crawl(crawls, tmp_path))
    second = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=chain)
    stands = materialization_metadata(second, "link_backtest")
    assert stands["measured_in_run"] == first.run_id and "(kept up to 5%)" in stands["why"]
    assert stands["plan_precision"] == measured["plan_precision"]
    strict = {"ops": {"link_backtest": {"config": {"remeasure_above": 0.0}}}}
    third = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["link_backtest"], run_config=strict)
    again = materialization_metadata(third, "link_backtest")
    assert "measured_in_run" not in again and again["why"].startswith("measured: ")
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        rows = con.execute(
            "SELECT run_id, measured_in_run, crawl_id FROM graph.backtest_runs WHERE site = ? "
            "ORDER BY ran_at",
            [LIGHT],
        ).fetchall()
    assert [(run, by) for run, by, _ in rows] == [
        (first.run_id, first.run_id),
        (second.run_id, first.run_id),
        (third.run_id, third.run_id),
    ]
    assert rows[0][2] != rows[1][2] == rows[2][2]  # each row names the crawl of its own run


# --- page text -----------------------------------------------------------------------------------------


def test_page_text_reaches_the_pages_and_the_candidates(
    warehouse_path, inbox_root, instance, crawls, encoder
):
    text = crawls / "hugodocs" / "page_text.csv"
    assert export_kind(text) == "text"
    register_crawl(
        inbox_root,
        "gohugo.io",
        crawls / "hugodocs/internal_html.csv",
        crawls / "hugodocs/all_inlinks.csv",
        text_src=text,
    )
    result = run_site(warehouse_path, inbox_root, instance, "gohugo.io", steps=UPSTREAM[:4])
    assert result.success
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        with_text = con.execute("SELECT count(*) FROM staging.pages WHERE body_text IS NOT NULL").fetchone()[
            0
        ]
        features = con.execute(
            "SELECT p.body_text FROM staging.pages p WHERE p.url = 'https://gohugo.io/about/features/'"
        ).fetchone()[0]
    assert with_text == 625  # the pages whose text is not empty
    assert features.startswith("Framework Multiplatform")
    assert materialization_metadata(result, "raw_page_text")["pages_with_text"] == 625


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["https://www.lightchiropractic.sg/", "Home"], ["not a url", "text"]],
         "page_text.csv: row 2: 'not a url' is not a page URL"),
        ([["https://www.lightchiropractic.sg/a/", "one"], ["https://www.lightchiropractic.sg/a", "two"]],
         "page_text.csv: rows 1 and 2 both give the text of https://www.lightchiropractic.sg/a/"),
    ],
)  # fmt: skip
def test_a_bad_page_text_file_is_refused_and_nothing_is_lost(
    warehouse_path, inbox_root, instance, crawls, rows, message
):
    folder = inbox_root / LIGHT
    register_crawl(inbox_root, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    good = [["https://www.lightchiropractic.sg/", "Welcome to the clinic."]]
    write_export(folder / "page_text.csv", ["Address", "Text"], good)
    assert run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["raw_crawl", "raw_page_text"]).success
    write_export(folder / "page_text.csv", ["Address", "Text"], rows)
    with pytest.raises(InputError, match=r"page_text\.csv"):
        read_page_text(folder / "page_text.csv", LIGHT)
    failed = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["raw_page_text"])
    assert not failed.success and message in failure_message(failed)
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        kept = con.execute("SELECT url, text FROM raw.page_text").fetchall()
    assert kept == [("https://www.lightchiropractic.sg/", "Welcome to the clinic.")]


def test_markup_in_page_text_is_removed_and_the_run_says_how_many_rows_held_it(
    warehouse_path, inbox_root, instance, crawls
):
    register_crawl(inbox_root, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    rows = [
        [f"https://{LIGHT}/", 'Welcome <script>alert("x")</script><b>to</b> the clinic.'],
        [f"https://{LIGHT}/contact-us/", '<img src=x onerror="alert(1)">Call us'],
        [f"https://{LIGHT}/faq/", "Is a<b and c>d? Plain text stays."],
    ]
    write_export(inbox_root / LIGHT / "page_text.csv", ["Address", "Text"], rows)
    result = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=["raw_crawl", "raw_page_text"])
    assert result.success
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        texts = con.execute("SELECT text FROM raw.page_text ORDER BY url").fetchall()
    assert texts == [("Welcome to the clinic.",), ("Call us",), ("Is a<b and c>d? Plain text stays.",)]
    warning = materialization_metadata(result, "raw_page_text")["warning"]
    assert warning == (
        "page_text.csv: 2 of its 3 rows held HTML markup (tags, scripts, styles): removed, the words kept."
    )


def test_a_page_text_file_without_a_text_column_names_what_it_needs(inbox_root, crawls):
    path = write_export(inbox_root / "page_text.csv", ["Address", "Words"], [["https://x.example/", "a"]])
    with pytest.raises(InputError, match=r"page_text\.csv") as error:
        read_page_text(path, "x.example")
    assert "Text" in str(error.value)


def test_a_backtest_of_too_few_hidden_links_says_it_cannot_be_read():
    from interlink_pipeline.core.relevance.backtest_runs import MIN_MEASURED_LINKS, thin_measurement

    said = thin_measurement(4, 0.0, [0.0, 0.6])
    assert said.startswith("only 4 in-content links were hidden, too few to read the plan's precision (0.0%, "
                           "95% interval [0.000, 0.600])")  # fmt: skip
    assert thin_measurement(MIN_MEASURED_LINKS, 0.3, None) is None
