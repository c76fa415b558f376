"""Similarity pairs and topic clusters: the core on controlled vectors, the assets on real data."""

import re
from typing import ClassVar

import duckdb
import numpy as np
import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.inbox import register_crawl
from interlink_pipeline.core.ml import exact_search
from interlink_pipeline.core.ml.ann_search import RECALL_SAMPLE, Approximate, checked_top, recall_at_k
from interlink_pipeline.core.ml.cluster_names import distinct_labels, label_clusters
from interlink_pipeline.core.ml.clusters import ClusterOptions, PreviousClusters, candidate_ks, topic_clusters
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.ml.page_neighbours import nearest_pages, neighbour_state
from interlink_pipeline.core.ml.similarity import SimilarityOptions, search, similar_pairs
from interlink_pipeline.core.text import detect_language, stop_words
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import NUTRI, SAMPLE_DIR, materialization_metadata, run_site

UP_TO_PAIRS = ["raw_crawl", "raw_links", "raw_page_text", "pages", "page_embeddings", "similarity_pairs"]
UP_TO_CLUSTERS = [*UP_TO_PAIRS, "topic_clusters"]


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _blobs(n_per: int, centres: int, dim: int = 64, spread: float = 0.15, seed: int = 0):
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=(centres, dim))
    labels = np.repeat(np.arange(centres), n_per)
    return _unit(centre[labels] + spread * rng.normal(size=(len(labels), dim))), labels


def _ids(n: int) -> pl.Series:
    return pl.Series([f"{i:016x}" for i in range(n)])


def test_exact_top_matches_brute_force_in_small_blocks(monkeypatch):
    vectors, _ = _blobs(100, 5)
    monkeypatch.setattr(exact_search, "BLOCK_BYTES", 4 * len(vectors) * 7)  # 7 query rows per block
    idx, scores = exact_top(vectors, vectors, 10, query_ids=np.arange(len(vectors)))
    full = vectors @ vectors.T
    np.fill_diagonal(full, -np.inf)
    expected = np.argsort(-full, axis=1, kind="stable")[:, :10]
    assert np.allclose(scores, np.take_along_axis(full, expected, axis=1), atol=1e-5)
    assert not (idx == np.arange(len(vectors))[:, None]).any()  # never itself


def _recrawl(vectors, ids, hashes, rng, share, round_):
    """The next crawl: `share` of the pages removed, as many changed and as many added (ids sorted)."""
    n, dim = vectors.shape
    size = max(1, int(share * n))
    kept = np.sort(rng.choice(n, size=n - size, replace=False))
    vectors, ids, hashes = vectors[kept].copy(), ids.gather(kept), hashes.gather(kept)
    changed = rng.choice(len(kept), size, replace=False)
    vectors[changed] = _unit(vectors[changed] + 0.5 * rng.normal(size=(size, dim)))
    hashes = hashes.scatter(changed, [f"changed-{round_}-{i}" for i in changed])
    added = _unit(vectors[rng.choice(len(kept), size)] + 0.3 * rng.normal(size=(size, dim)))
    vectors = np.vstack([vectors, added])
    ids = pl.concat([ids, pl.Series([f"f{round_:x}{i:014x}" for i in range(size)])])
    hashes = pl.concat([hashes, pl.Series([f"added-{round_}-{i}" for i in range(size)])])
    order = np.argsort(ids.to_numpy())
    return vectors[order], ids.gather(order), hashes.gather(order)


def test_incremental_search_equals_a_full_search_over_successive_recrawls():
    """Each re-crawl removes, changes and adds pages; the kept lists plus the changed pages' scores must give
    exactly what a full exact search gives, round after round (the margin wears down and is restored)."""
    rng = np.random.default_rng(3)
    vectors, _ = _blobs(60, 40, dim=32, spread=0.4)
    ids, hashes = _ids(len(vectors)), pl.Series([f"text-{i}" for i in range(len(vectors))])
    width, wanted = 30, 20
    idx, scores, floors, increment = nearest_pages(vectors, width, ids, hashes, "model@1")
    assert increment.mode == "full" and increment.why == "no earlier search of this site"
    for round_ in range(6):
        state = neighbour_state(ids, hashes, "model@1", idx, scores, floors)
        vectors, ids, hashes = _recrawl(vectors, ids, hashes, rng, 0.02, round_)
        idx, scores, floors, increment = nearest_pages(vectors, width, ids, hashes, "model@1", state)
        full_idx, full_scores = exact_top(vectors, vectors, wanted, query_ids=np.arange(len(vectors)))
        assert increment.mode == "incremental" and increment.pages_changed == 96
        assert increment.pages_removed == 48 and increment.pages_searched < 0.2 * len(vectors)
        assert np.allclose(scores[:, :wanted], full_scores, atol=1e-5)
        assert (np.sort(idx[:, :wanted], axis=1) == np.sort(full_idx, axis=1)).all()
        assert set(state["page_id"]) - set(ids) and not (set(state["page_id"]) - set(ids)) & set(
            neighbour_state(ids, hashes, "model@1", idx, scores, floors)["neighbour_page_ids"].explode()
        )  # removed pages are nobody's neighbour any more
    changed_model = nearest_pages(vectors, width, ids, hashes, "model@2", state)[3]
    assert changed_model.mode == "full" and "model changed" in changed_model.why
    _, many, _ = _recrawl(vectors, ids, hashes, rng, 0.3, 9)
    assert "a full search is cheaper" in nearest_pages(vectors, width, many, hashes, "model@1", state)[3].why


def test_ann_recall_is_measured_against_exact():
    vectors, _ = _blobs(400, 25, dim=48)
    idx, scores, stats = search(vectors, 15, SimilarityOptions(method="ann"))
    assert stats.method == "ann:HNSW M=32 efSearch=64" and stats.recall_sample == 1000
    _, exact_scores = exact_top(vectors, vectors, 15, query_ids=np.arange(len(vectors)))
    measured = recall_at_k(scores, exact_scores, 15)
    assert measured >= 0.98 and abs(stats.recall_at_k - measured) < 0.02
    assert not (idx == np.arange(len(vectors))[:, None]).any()
    # reported scores are the true cosines of the pages returned
    assert np.allclose(scores, np.einsum("ij,ikj->ik", vectors, vectors[idx]), atol=1e-5)


def test_an_approximate_search_below_the_recall_floor_gives_way_to_exact_search():
    """A planted bad index (random neighbours): its recall is measured at each search width, found short,
    and the exact search answers, said in the run's metadata; a graph short of the floor at the first width
    and past it at the wider one answers from the wider search; a good one is kept at the first; a large
    site's full neighbour search takes the same path (nearest_pages), a small one stays exact."""
    vectors, _ = _blobs(400, 25, dim=48)
    rng = np.random.default_rng(0)

    class Planted:
        """Random neighbours below `good_from` search width, the exact ones from it."""

        good_from = 10**9
        searched: ClassVar[list[int]] = []  # how many pages each search asked of

        def __init__(self, rows):
            self.rows = rows

        def top(self, n, ef_search, rows=None):
            rows = np.arange(len(self.rows)) if rows is None else rows
            Planted.searched.append(len(rows))
            if ef_search >= self.good_from:
                return exact_top(self.rows[rows], self.rows, n, query_ids=rows)
            idx = rng.integers(0, len(self.rows), size=(len(rows), n))
            return idx, np.einsum("ij,ikj->ik", self.rows[rows], self.rows[idx]).astype(np.float32)

    _, exact_scores = exact_top(vectors, vectors, 15, query_ids=np.arange(len(vectors)))
    _, scores, check = checked_top(vectors, 15, Approximate(above=0, k=15), graph=Planted)
    assert check.fell_back and check.method == "exact" and check.recall_at_k < 0.5
    widths = ", ".join(rf"(0\.\d+) at efSearch {ef}" for ef in (64, 128, 256))
    said = re.search(f"recall@15 was {widths}, < 0\\.98: searched exactly", check.said())
    first, wider, widest = said.groups()
    assert Planted.searched == [RECALL_SAMPLE] * 3  # each width tried on the sample alone
    assert max(float(first), float(wider)) < 0.5
    assert float(widest) == pytest.approx(check.recall_at_k, abs=1e-3)
    assert np.array_equal(scores, exact_scores)
    Planted.good_from, Planted.searched = 256, []
    _, scores, wider_check = checked_top(vectors, 15, Approximate(above=0, k=15), graph=Planted)
    assert Planted.searched == [RECALL_SAMPLE] * 3 + [len(vectors)]  # every page searched once, at the width
    assert wider_check.method == "ann:HNSW M=32 efSearch=256" and wider_check.recall_at_k == 1.0
    assert not wider_check.fell_back and np.array_equal(scores, exact_scores)
    _, _, kept = checked_top(vectors, 15, Approximate(above=0, k=15))
    assert not kept.fell_back and kept.method == "ann:HNSW M=32 efSearch=64" and kept.recall_at_k >= 0.98
    ids, hashes = _ids(len(vectors)), pl.Series([str(i) for i in range(len(vectors))])
    large = nearest_pages(vectors, 15, ids, hashes, "m", approximate=Approximate(above=5_000, k=15))[3]
    small = nearest_pages(vectors, 15, ids, hashes, "m", approximate=Approximate(above=20_000, k=15))[3]
    assert large.search.method.startswith("ann:HNSW") and large.search.recall_sample == 1000
    assert small.search.method == "exact" and small.search.recall_at_k is None


def test_recall_counts_tied_pages_as_found():
    exact = np.array([[0.9, 0.8, 0.8]], dtype=np.float32)
    assert recall_at_k(np.array([[0.9, 0.8, 0.8]]), exact, 3) == 1.0  # other pages, same scores
    assert recall_at_k(np.array([[0.9, 0.8, 0.7]]), exact, 3) == pytest.approx(2 / 3)


def test_rules_duplicates_cap_threshold_and_reciprocity():
    rng = np.random.default_rng(3)
    hub = _unit(rng.normal(size=(1, 32)))
    # 30 pages close to one "template" page, plus two near-identical pages
    near_hub = _unit(hub + 0.35 * rng.normal(size=(30, 32)))
    twin = _unit(rng.normal(size=(1, 32)))
    twins = _unit(np.vstack([twin, twin + 0.01 * rng.normal(size=(1, 32))]))
    vectors = np.vstack([hub, near_hub, twins])
    ids = _ids(len(vectors))
    options = SimilarityOptions(k=5, min_score=0.3, max_per_target=4, candidates_per_page=20)
    # the twins share a content hash; two template pages close to the hub share nothing but their template
    keys = pl.Series([None] * (len(vectors) - 2) + ["same-content", "same-content"], dtype=pl.String)
    pairs, stats = similar_pairs(ids, pl.Series(["/"] * len(vectors)), vectors, options, keys)
    assert stats.method == "exact"
    similar = pairs.filter(pl.col("relation") == "similar")
    assert similar.group_by("source_page_id").len()["len"].max() <= 5
    assert similar.group_by("target_page_id").len()["len"].max() <= 4  # the hub cannot take every slot
    assert similar["score"].min() >= 0.3
    twin_ids = set(ids[-2:])
    duplicates = pairs.filter(pl.col("relation") == "near_duplicate")
    assert set(duplicates["source_page_id"]) == twin_ids and duplicates["reciprocal"].all()
    assert not similar.filter(
        pl.col("source_page_id").is_in(list(twin_ids)) & pl.col("target_page_id").is_in(list(twin_ids))
    ).height
    # reciprocal is true exactly when the reverse pair exists
    reverse = set(zip(similar["target_page_id"], similar["source_page_id"], strict=True))
    expected = [
        (s, t) in reverse for s, t in zip(similar["source_page_id"], similar["target_page_id"], strict=True)
    ]
    assert similar["reciprocal"].to_list() == expected
    ranks = similar.group_by("source_page_id").agg(pl.col("rank").sort())
    assert all(r == list(range(1, len(r) + 1)) for r in ranks["rank"].to_list())


def test_path_filters_and_no_self_pairs():
    vectors, _ = _blobs(20, 3)
    paths = pl.Series(["/blog/post"] * 30 + ["/p/item"] * 30)
    options = SimilarityOptions(
        k=5,
        min_score=-1,
        source_paths=("^/blog/",),
        target_paths=("^/p/", "^/blog/"),
        exclude_target_paths=("^/blog/post$",),
    )
    pairs, _ = similar_pairs(_ids(60), paths, vectors, options)
    sources = pairs["source_page_id"].str.to_integer(base=16)
    targets = pairs["target_page_id"].str.to_integer(base=16)
    assert (sources < 30).all() and (targets >= 30).all() and (sources != targets).all()
    with pytest.raises(InputError, match="the path filters leave 0 source and 60 target pages"):
        similar_pairs(_ids(60), paths, vectors, SimilarityOptions(source_paths=("^/shop/",)))
    with pytest.raises(InputError, match="min_score must be between -1 and 1"):
        similar_pairs(_ids(60), paths, vectors, SimilarityOptions(min_score=1.5))


def test_near_identical_titles_without_shared_content_stay_similar():
    """Template pages that differ in their entity are linkable, however close their titles' vectors."""
    rng = np.random.default_rng(5)
    base = _unit(rng.normal(size=(1, 32)))
    floor_plans = _unit(base + 0.01 * rng.normal(size=(6, 32)))  # cosine > 0.99 between all of them
    assert (floor_plans @ floor_plans.T).min() > 0.95
    pairs, _ = similar_pairs(_ids(6), pl.Series(["/plans/"] * 6), floor_plans, SimilarityOptions(k=5))
    assert set(pairs["relation"]) == {"similar"} and pairs.height == 30


def test_candidate_ks():
    assert candidate_ks(1700, ClusterOptions()) == sorted(set(candidate_ks(1700, ClusterOptions())))
    ks = candidate_ks(1700, ClusterOptions())
    assert ks[0] == 10 and ks[-1] == 82 and len(ks) == 8
    assert candidate_ks(10, ClusterOptions()) == [2, 3, 4, 5, 6]
    assert candidate_ks(5000, ClusterOptions(k_min=5, k_max=9, candidates=5)) == [5, 6, 7, 8, 9]


def test_clusters_find_k_and_distinctive_labels():
    vectors, truth = _blobs(40, 6, dim=96, spread=0.2)
    words = ["tents", "boots", "stoves", "ropes", "headlamps", "skis"]
    texts = pl.Series(
        [
            f"best {words[c]} for the trip, {['new', 'cheap', 'light'][i % 3]} model"
            for i, c in enumerate(truth)
        ]
    )
    page_rows, clusters, stats = topic_clusters(
        _ids(len(vectors)), texts, vectors, ClusterOptions(k_min=3, k_max=10)
    )
    assert stats.k == 6 and stats.chosen_by == "silhouette" and stats.language == "en"
    assert max(stats.silhouette_by_k, key=stats.silhouette_by_k.get) == 6
    assert sorted(clusters["label"]) == sorted(w.title() for w in words)
    assert page_rows["page_id"].is_unique().all() and clusters["size"].sum() == len(vectors)
    assert (
        page_rows.group_by("cluster_id").agg(pl.col("is_representative").sum())["is_representative"].to_list()
        == [1] * 6
    )


def test_labels_language_and_word_settings():
    assert (
        detect_language(["Proteínas para deportistas y ciclistas", "La mejor creatina del mercado"]) == "es"
    )
    assert detect_language(["Die besten Wanderschuhe für den Winter", "Ein Zelt und der Rucksack"]) == "de"
    assert detect_language(["The best hiking boots for the winter"]) == "en"
    texts = ["home gym set", "home gym bench", "garden hose reel", "garden hose nozzle"]
    labels = np.array([0, 0, 1, 1])
    default = label_clusters(texts, labels, stop_words("en"), 5)
    assert "home" not in " ".join(
        default["top_terms"].explode().drop_nulls()
    )  # "home" is an English stop word
    kept = label_clusters(texts, labels, stop_words("en", keep=("home",)), 5)
    assert kept.filter(pl.col("cluster_id") == 0)["label"][0] == "Home gym"
    dropped = label_clusters(texts, labels, stop_words("en", extra=("garden",)), 5)
    assert "garden" not in dropped.filter(pl.col("cluster_id") == 1)["label"][0].lower()
    with pytest.raises(InputError, match="no stop words for language 'xx'"):
        stop_words("xx")


def test_shared_labels_are_made_distinct():
    texts = ["trail shoes grip", "trail shoes cushion", "trail shoes grip", "trail shoes cushion"]
    frame = label_clusters(texts, np.array([0, 1, 0, 1]), frozenset(), 5)
    assert frame["label"].n_unique() == 2
    # three clusters with nothing to tell them apart, one of them named as the second would be numbered
    frame = pl.DataFrame(
        {"cluster_id": [0, 1, 2, 3], "label": ["misc", "misc", "misc (2)", "misc"], "top_terms": [[]] * 4},
        schema_overrides={"top_terms": pl.List(pl.String)},
    )
    assert distinct_labels(frame)["label"].to_list() == ["misc", "misc (2)", "misc (2) (2)", "misc (3)"]


def test_labels_are_written_as_the_pages_write_them_or_named_by_folder_or_central_page():
    texts = [
        "GetPage", "the GetPage", "a GetPage",  # a phrase, as the titles write it
        "Night hiking in Sarek: best time to go", "Trail running in Skye: where to stay",
        "Bouldering in Corsica: safety tips", "Via ferrata in Mallorca: hidden gems",
        "Wild camping in Atlas: best routes", "Winter walking in Tatras: gear checklist",
        "ReadingTime", "AddDate",  # no phrase two pages share
    ]  # fmt: skip
    labels = np.array([0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2])
    paths = ["/methods/getpage/", "/methods/getpage-example/", "/methods/usage/"]
    paths += [f"/guides/g{i}/" for i in range(6)] + ["/methods/readingtime/", "/methods/adddate/"]
    named = label_clusters(texts, labels, frozenset({"in", "to", "go", "the", "a"}), 5, paths=paths,
                           closeness=np.array([0.9] * 10 + [0.95]))  # fmt: skip
    assert named.sort("cluster_id")["label"].to_list() == ["GetPage", "Guides", "AddDate"]


def test_bad_cluster_settings():
    vectors, _ = _blobs(5, 2)
    with pytest.raises(InputError, match="k=20 must be between 2 and the number of pages minus one"):
        topic_clusters(_ids(10), pl.Series(["x"] * 10), vectors, ClusterOptions(k=20))


def test_a_recrawl_refines_the_last_clusters_and_keeps_their_ids_and_labels():
    """2% of the pages changed: the last centroids are refined (no k search), every cluster keeps its id and
    label, and the clustering agrees with a full one; 30% changed: k is chosen anew."""
    from sklearn.metrics import adjusted_rand_score

    vectors, truth = _blobs(40, 12, spread=0.3)
    ids = _ids(len(vectors))
    texts = pl.Series([f"topic{t} word{t} page{i}" for i, t in enumerate(truth)])
    hashes = pl.Series([f"h{i}" for i in range(len(vectors))])
    pages, clusters, stats = topic_clusters(ids, texts, vectors, text_hashes=hashes)
    assert stats.mode == "full" and stats.why == "no earlier clustering of this site"
    previous = PreviousClusters(
        np.asarray(clusters.sort("cluster_id")["centroid"].to_list(), dtype=np.float32),
        pages.select("page_id", "cluster_id").with_columns(hashes.alias("text_hash")),
        clusters.select("cluster_id", "label", "top_terms"),
        float(1 - pages["distance"].mean()),
    )
    rng = np.random.default_rng(5)
    changed = rng.choice(len(vectors), 10, replace=False)
    moved = vectors.copy()
    moved[changed] = _unit(moved[changed] + 0.05 * rng.normal(size=(10, vectors.shape[1])))
    new_hashes = hashes.scatter(changed, [f"changed{i}" for i in changed])
    warm_pages, warm_clusters, warm = topic_clusters(
        ids, texts, moved, text_hashes=new_hashes, previous=previous
    )
    assert warm.mode == "warm" and warm.chosen_by == "the last run's centroids" and not warm.silhouette_by_k
    assert (
        warm.why
        == "2.1% of the pages changed, were added or removed since the last run (k chosen anew above 10%)"
    )
    assert warm.k == stats.k and warm.labels_kept == stats.k
    assert warm_clusters.sort("cluster_id")["label"].equals(clusters.sort("cluster_id")["label"])
    assert adjusted_rand_score(pages["cluster_id"], warm_pages["cluster_id"]) > 0.95
    full_pages, _, _ = topic_clusters(ids, texts, moved, ClusterOptions(k=stats.k))
    assert adjusted_rand_score(full_pages["cluster_id"], warm_pages["cluster_id"]) > 0.95
    many = hashes.scatter(np.arange(150), [f"x{i}" for i in range(150)])
    _, _, anew = topic_clusters(ids, texts, moved, text_hashes=many, previous=previous)
    assert anew.mode == "full" and anew.why.endswith("more than 10%: k chosen anew")


def test_fewer_than_three_pages_form_one_cluster():
    vectors, _ = _blobs(1, 2)
    pages, clusters, stats = topic_clusters(_ids(2), pl.Series(["trail shoes", "trail boots"]), vectors)
    assert stats.k == 1 and stats.chosen_by == "fewer than 3 pages"
    assert pages["cluster_id"].to_list() == [0, 0] and clusters["size"].to_list() == [2]
    assert "trail" in clusters["label"][0].lower()


def test_sample_site_pairs_and_clusters_against_the_truth(sample_site):
    result, warehouse_path = sample_site, sample_site.warehouse
    assert result.success
    checks = {
        e.event_specific_data.check_name: e.event_specific_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert all(checks.values()) and {
        "similarity_pairs_k_respected",
        "every_page_in_one_cluster",
        "ml_similarity_pairs_schema",
        "ml_clusters_schema",
        "ml_page_clusters_schema",
    } <= set(checks)
    pairs_meta, cluster_meta = (
        materialization_metadata(result, "similarity_pairs"),
        materialization_metadata(result, "topic_clusters"),
    )
    # the sample's pages all have their own content hash: near-identical titles are similar, not duplicates
    assert pairs_meta["method"] == "exact" and pairs_meta["near_duplicate_pairs"] == 0
    top_pairs = pairs_meta["top_pairs"]
    assert top_pairs.columns == ["source_title", "target_title", "score"]
    top_scores = top_pairs["score"].to_list()
    assert len(top_scores) == 15 and top_scores == sorted(top_scores, reverse=True)
    assert pairs_meta["near_duplicates"].height == min(10, pairs_meta["near_duplicate_pairs"])
    assert cluster_meta["k_chosen_by"] == "silhouette" and cluster_meta["language"] == "en"
    assert cluster_meta["clusters"].columns[:3] == ["cluster_id", "label", "size"]
    truth = pl.read_csv(SAMPLE_DIR / "ground_truth.csv")
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        pages = con.execute("SELECT page_id, url FROM staging.pages").pl().join(truth, on="url")
        pairs = con.execute("SELECT * FROM ml.similarity_pairs WHERE relation = 'similar'").pl()
        clustered = con.execute("SELECT page_id, cluster_id FROM ml.page_clusters").pl()
        best = con.execute("SELECT max(round(score, 3)) FROM ml.similarity_pairs WHERE relation = 'similar'")
        assert top_scores[0] == best.fetchone()[0]  # the preview starts at the strongest pair
    topic = dict(zip(pages["page_id"], pages["topic"], strict=True))
    with_topic = pairs.filter(pl.col("source_page_id").replace_strict(topic, default="") != "")
    same_topic = (
        with_topic["source_page_id"].replace_strict(topic)
        == with_topic["target_page_id"].replace_strict(topic, default="")
    ).mean()
    assert same_topic > 0.8  # measured 0.9+ on the sample
    purity = (
        clustered.join(pages, on="page_id")
        .filter(pl.col("topic") != "")
        .group_by("cluster_id")
        .agg(pl.col("topic").value_counts(sort=True).first().struct.field("count").alias("top"), pl.len())
    )
    assert purity["top"].sum() / purity["len"].sum() > 0.6


def test_stale_embeddings_are_refused(tmp_path, instance, sample_site):
    site = sample_site.folder.copy(tmp_path / "site")
    warehouse_path, sample_inbox = site.warehouse, site.inbox
    with duckdb.connect(str(warehouse_path)) as con:
        before = con.execute("SELECT count(*) FROM ml.similarity_pairs").fetchone()[0]
        con.execute(
            "DELETE FROM ml.page_embeddings WHERE page_id IN (SELECT page_id FROM ml.page_embeddings "
            "LIMIT 10)"
        )
    result = run_site(warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=["similarity_pairs"])
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "ml.page_embeddings for www.alpinegear.example is stale (1690 vectors, 1700 pages" in (
        failure.event_specific_data.error.message
    )
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ml.similarity_pairs").fetchone()[0] == before


def test_real_crawl_with_filters_and_spanish_labels(warehouse_path, inbox_root, instance, crawls, encoder):
    register_crawl(inbox_root, NUTRI, crawls / "nutrisport/internal_html.csv")
    config = {
        "ops": {
            "similarity_pairs": {"config": {"source_paths": ["^/web/"], "exclude_target_paths": ["^/web/"]}}
        }
    }
    result = run_site(warehouse_path, inbox_root, instance, NUTRI, run_config=config, steps=UP_TO_CLUSTERS)
    assert result.success
    assert materialization_metadata(result, "topic_clusters")["language"] == "es"
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        paths = con.execute(
            "SELECT s.path AS source, t.path AS target FROM ml.similarity_pairs p "
            "JOIN staging.pages s ON s.page_id = p.source_page_id "
            "JOIN staging.pages t ON t.page_id = p.target_page_id"
        ).pl()
        labels = con.execute("SELECT label FROM ml.clusters").pl()["label"].to_list()
    assert paths.height > 0 and paths["source"].str.starts_with("/web/").all()
    assert not paths["target"].str.starts_with("/web/").any()
    assert not {"de", "la", "el", "para", "con"} & {w.lower() for label in labels for w in label.split()}


def _pairs(path) -> pl.DataFrame:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT source_page_id, target_page_id, score, rank, relation, reciprocal "
            "FROM ml.similarity_pairs ORDER BY ALL"
        ).pl()


def test_a_recrawl_searches_only_changed_pages_and_equals_a_cold_run(tmp_path, instance, sample_site):
    """The sample re-crawled with 2% of its titles changed, one page gone and one new: the incremental run
    searches those pages only, and its pairs are a cold run's on the same crawl; the gone page is in no
    pair and no kept list."""
    export = pl.read_csv(SAMPLE_DIR / "internal_all.csv", infer_schema=False)
    gone = export["Address"][40]
    recrawl = export.filter(pl.col("Address") != gone).with_columns(
        pl.when(pl.int_range(pl.len()) % 50 == 7)
        .then(pl.col("Title 1") + " (updated)")
        .otherwise(pl.col("Title 1"))
        .alias("Title 1")
    )
    new_page = recrawl.slice(100, 1).with_columns(
        (pl.col("Address") + "new-trail-guide/").alias("Address"),
        pl.lit("New Trail Guide | Alpine Gear").alias("Title 1"),
        pl.lit("").alias("Hash"),
    )
    (tmp_path / "recrawl").mkdir()
    pl.concat([recrawl, new_page]).write_csv(tmp_path / "recrawl" / "internal_all.csv")
    site = sample_site.phases["plan"].copy(tmp_path / "warm")  # the sample's crawl, searched
    warm, inbox_root = site.warehouse, site.inbox
    with duckdb.connect(str(warm), read_only=True) as con:
        (gone_id,) = con.execute("SELECT page_id FROM staging.pages WHERE crawled_url = ?", [gone]).fetchone()
        before = con.execute("SELECT page_id, text_hash FROM staging.pages").pl()
    register_crawl(
        inbox_root, SAMPLE_HOST, tmp_path / "recrawl" / "internal_all.csv", SAMPLE_DIR / "all_inlinks.csv"
    )
    result = run_site(warm, inbox_root, instance, SAMPLE_HOST, steps=UP_TO_PAIRS)
    assert result.success
    meta = materialization_metadata(result, "similarity_pairs")
    assert meta["search"] == "incremental" and meta["pages_removed"] == 1
    with duckdb.connect(str(warm), read_only=True) as con:
        after = con.execute("SELECT page_id, text_hash FROM staging.pages").pl()
    changed = after.join(before, on=["page_id", "text_hash"], how="anti").height
    assert meta["pages_changed"] == changed and changed >= 35  # 34 changed titles and the new page
    assert meta["pages_searched"] < 100 and meta["pages_reused"] > 1600
    cold = tmp_path / "cold.duckdb"
    assert run_site(cold, inbox_root, instance, SAMPLE_HOST, steps=UP_TO_PAIRS).success
    assert materialization_metadata(result, "similarity_pairs")["search"] == "incremental"
    incremental, full = _pairs(warm), _pairs(cold)
    slots = ["source_page_id", "relation", "rank"]
    compared = incremental.join(full, on=slots, how="full", suffix="_cold")
    assert compared.height == incremental.height == full.height
    assert (compared["score"] - compared["score_cold"]).abs().max() < 1e-5
    # pages with identical texts tie exactly, and either is the exact answer; nothing else may differ
    swapped = compared.filter(pl.col("target_page_id") != pl.col("target_page_id_cold"))
    assert swapped.height <= 4 and (swapped["score"] == swapped["score_cold"]).all()
    with duckdb.connect(str(warm), read_only=True) as con:
        listed = con.execute(
            "SELECT count(*) FROM ml.page_neighbours "
            "WHERE page_id = ? OR list_contains(neighbour_page_ids, ?)",
            [gone_id, gone_id],
        ).fetchone()[0]
    assert (
        listed == 0
        and not incremental.filter(
            (pl.col("source_page_id") == gone_id) | (pl.col("target_page_id") == gone_id)
        ).height
    )
