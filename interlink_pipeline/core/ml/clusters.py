"""Topic clusters: k-means over page embeddings, k chosen by silhouette, labels from class-based TF-IDF.

k is configured, or chosen among a log-spaced range of candidates by the mean silhouette (cosine) of a
sample: each candidate is fitted on a sample of pages, the best is refitted on all of them (mini-batch
k-means above `minibatch_above` pages). Each cluster's label (cluster_names) comes from class-based TF-IDF
(c-TF-IDF) over 1–2-word phrases of its pages' texts: a phrase scores high when it is frequent in the
cluster and rare in the others. Stop words come from the offline stopwords-iso lists, in the site's
language (detected from the texts unless configured).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.cluster_names import distinct_labels, label_clusters
from interlink_pipeline.core.settings import setting
from interlink_pipeline.core.text import detect_language, stop_words


@dataclass(frozen=True)
class ClusterOptions:
    """The `topic_clusters` step's settings (its Dagster config is derived from the `setting` fields)."""

    k: int | None = setting(None, "Number of clusters; 0 chooses it by silhouette.", unset=0, ge=0)
    k_min: int | None = setting(None, "Smallest k tried (0: about sqrt(pages)/4).", unset=0, ge=0)
    k_max: int | None = setting(None, "Largest k tried (0: about 2*sqrt(pages)).", unset=0, ge=0)
    candidates: int = 8
    selection_sample: int = 20_000  # pages each candidate is fitted on
    silhouette_sample: int = 4_000
    minibatch_above: int = 20_000
    language: str | None = setting(None, "ISO 639-1 code of the site's language ('' detects it).", unset="")
    extra_stop_words: tuple[str, ...] = setting((), "Words never used in labels.")
    keep_words: tuple[str, ...] = setting((), "Words never treated as stop words.")
    top_terms: int = setting(10, "Phrases kept per cluster.", ge=1, le=50)
    seed: int = 0
    recluster_above: float = setting(
        0.1,
        "A re-crawl refines the last run's clusters (ids and settled labels kept) while at most this "
        "share of pages changed; above it, k is chosen anew.",
        ge=0,
        le=1,
    )


@dataclass
class ClusterStats:
    k: int
    chosen_by: str
    silhouette_by_k: dict[int, float] = field(default_factory=dict)
    language: str = "en"
    seconds: float = 0.0
    mode: str = "full"  # full, or warm: the last run's centroids refined
    why: str = ""
    labels_kept: int = 0  # clusters whose label carried over (their members barely moved)


# A warm start may not make the clusters looser than this (mean cosine to the centroid) than last time.
MAX_COHESION_DROP = 0.02
# A cluster keeps its label while this share of its members (Jaccard) is the same as last time.
LABEL_KEPT_ABOVE = 0.9


@dataclass(frozen=True)
class PreviousClusters:
    """The last run's clustering: what a re-crawl warm-starts from."""

    centroids: np.ndarray  # row i: cluster i's unit centroid
    members: pl.DataFrame  # page_id, cluster_id, text_hash
    names: pl.DataFrame  # cluster_id, label, top_terms
    cohesion: float  # mean cosine of the pages to their centroid


def candidate_ks(n: int, options: ClusterOptions) -> list[int]:
    root = np.sqrt(n)
    low = options.k_min or max(2, round(root / 4))
    high = options.k_max or max(low, min(n - 1, round(2 * root), 1000))
    return sorted({round(v) for v in np.geomspace(low, high, options.candidates)} & set(range(2, n)))


def fit_kmeans(
    vectors: np.ndarray,
    k: int,
    options: ClusterOptions,
    n_init: int = 3,
    init: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, unit-norm centroids) of k-means on unit vectors (so Euclidean follows cosine), from
    k-means++ seeds or the given `init` centres (then one run)."""
    from sklearn.cluster import KMeans, MiniBatchKMeans

    start = {"init": init, "n_init": 1} if init is not None else {"n_init": n_init}
    if len(vectors) > options.minibatch_above:
        model = MiniBatchKMeans(k, random_state=options.seed, batch_size=4096, max_no_improvement=20, **start)
    else:
        model = KMeans(k, random_state=options.seed, **start)
    labels = model.fit_predict(vectors)
    centroids = model.cluster_centers_.astype(np.float32)
    centroids /= np.clip(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12, None)
    return labels.astype(np.int32), centroids


def choose_k(vectors: np.ndarray, options: ClusterOptions) -> tuple[int, dict[int, float]]:
    """The candidate k with the best mean silhouette (cosine) on a sample. The candidates share one
    k-means++ seeding, of the largest k: its first k seeds are a k-means++ seeding of k, and seeding is
    sequential, so seeding every candidate apart cost the sum of the ks (on a 9,750-page site, 42 s of
    the choice against 13 s). One initialisation per candidate is enough to compare k; the chosen k is
    then fitted with three."""
    from sklearn.cluster import kmeans_plusplus
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(options.seed)
    n = len(vectors)
    fit_rows = rng.choice(n, size=min(n, options.selection_sample), replace=False)
    score_rows = fit_rows[: min(len(fit_rows), options.silhouette_sample)]
    sample = vectors[fit_rows]
    ks = candidate_ks(len(fit_rows), options)
    seeds = kmeans_plusplus(sample, max(ks), random_state=options.seed)[0] if ks else sample[:0]
    scores: dict[int, float] = {}
    for k in ks:
        _labels, centroids = fit_kmeans(sample, k, options, init=seeds[:k])
        assigned = _nearest(vectors[score_rows], centroids)
        if len(set(assigned)) < 2:
            continue
        scores[k] = float(silhouette_score(vectors[score_rows], assigned, metric="cosine"))
    if not scores:
        return 2, {}
    return max(scores, key=scores.get), scores


def _nearest(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return np.argmax(vectors @ centroids.T, axis=1).astype(np.int32)


def topic_clusters(
    page_ids: pl.Series,
    texts: pl.Series,
    vectors: np.ndarray,
    options: ClusterOptions | None = None,
    *,
    text_hashes: pl.Series | None = None,
    previous: PreviousClusters | None = None,
    paths: pl.Series | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, ClusterStats]:
    """(page rows, cluster rows, stats) for one site's pages. Given the pages' `text_hashes` and the last
    run's clustering, a re-crawl that changed few pages refines the last centroids instead of choosing k
    anew: cluster ids stay, and a cluster whose members barely moved keeps its label."""
    options = options or ClusterOptions()
    started = time.monotonic()
    warm, why = _warm_start(page_ids, text_hashes, vectors, options, previous)
    labels, centroids, k, chosen_by, scores = _clustering(vectors, options, warm)
    similarity = np.einsum("ij,ij->i", vectors, centroids[labels])
    text_list = texts.to_list()
    language = options.language or detect_language(text_list)
    stops = stop_words(language, options.extra_stop_words, options.keep_words)
    named = label_clusters(
        text_list,
        labels,
        stops,
        options.top_terms,
        paths=paths.to_list() if paths is not None else None,
        closeness=similarity,
    )
    page_rows = pl.DataFrame(
        {
            "page_id": page_ids,
            "cluster_id": pl.Series(labels, dtype=pl.Int32),
            "distance": pl.Series(np.clip(1.0 - similarity, 0.0, 2.0), dtype=pl.Float32),
        }
    )
    kept = 0
    if warm is not None:
        named, kept = _carried_labels(named, page_rows, previous)
    page_rows = page_rows.with_columns(
        (pl.col("distance").rank("ordinal").over("cluster_id") == 1).alias("is_representative")
    )
    stats = ClusterStats(
        k, chosen_by, scores, language, time.monotonic() - started, "warm" if warm else "full", why, kept
    )
    return page_rows, _cluster_rows(named, page_rows, centroids), stats


def _clustering(
    vectors: np.ndarray, options: ClusterOptions, warm: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, int, str, dict[int, float]]:
    """(labels, centroids, k, how k was chosen, silhouette by k): the warm start's, or a fresh fit."""
    n = len(vectors)
    if warm is not None:
        labels, centroids = warm
        return labels, centroids, len(centroids), "the last run's centroids", {}
    if n < 3:  # too few pages to compare clusterings: they form one topic
        mean = vectors.mean(axis=0)
        labels, centroids = np.zeros(n, dtype=np.int64), (mean / max(np.linalg.norm(mean), 1e-12))[None, :]
        return labels, centroids, 1, "fewer than 3 pages", {}
    if options.k is not None:
        if not 2 <= options.k < n:
            raise InputError(f"k={options.k} must be between 2 and the number of pages minus one ({n - 1}).")
        k, chosen_by, scores = options.k, "configured", {}
    else:
        k, scores = choose_k(vectors, options)
        chosen_by = "silhouette"
    labels, centroids = fit_kmeans(vectors, k, options)
    return labels, centroids, k, chosen_by, scores


def _cluster_rows(named: pl.DataFrame, page_rows: pl.DataFrame, centroids: np.ndarray) -> pl.DataFrame:
    """Each cluster's name, size, cohesion, representative page and centroid, largest first."""
    sizes = page_rows.group_by("cluster_id").agg(
        pl.len().cast(pl.Int32).alias("size"),
        (1 - pl.col("distance")).mean().cast(pl.Float32).alias("cohesion"),
        pl.col("page_id").filter(pl.col("is_representative")).first().alias("representative_page_id"),
    )
    centroid_rows = pl.DataFrame(
        {
            "cluster_id": pl.Series(np.arange(len(centroids)), dtype=pl.Int32),
            "centroid": pl.Series(centroids.astype(np.float32)).cast(pl.List(pl.Float32)),
        }
    )
    return (
        named.join(sizes, on="cluster_id")
        .join(centroid_rows, on="cluster_id")
        .sort("size", "cluster_id", descending=[True, False])
    )


def _warm_start(
    page_ids: pl.Series,
    text_hashes: pl.Series | None,
    vectors: np.ndarray,
    options: ClusterOptions,
    previous: PreviousClusters | None,
) -> tuple[tuple[np.ndarray, np.ndarray] | None, str]:
    """(labels, centroids) refined from the last run's centroids, or None; and why."""
    if previous is None or text_hashes is None or not len(previous.centroids):
        return None, "no earlier clustering of this site"
    k = len(previous.centroids)
    if previous.centroids.shape[1] != vectors.shape[1]:
        return None, "the embedding model changed"
    if options.k is not None and options.k != k:
        return None, f"k is configured to {options.k} (was {k})"
    if not 2 <= k < len(vectors):
        return None, f"{len(vectors)} pages are too few for the last run's {k} clusters"
    now = pl.DataFrame({"page_id": page_ids.cast(pl.String), "text_hash": text_hashes.cast(pl.String)})
    same = now.join(previous.members, on=["page_id", "text_hash"], how="semi").height
    removed = previous.members.join(now, on="page_id", how="anti").height
    changed = (now.height - same) + removed
    share = changed / max(now.height, previous.members.height)
    moved = f"{share:.1%} of the pages changed, were added or removed since the last run"
    if share > options.recluster_above:
        return None, f"{moved}, more than {options.recluster_above:.0%}: k chosen anew"
    from sklearn.cluster import KMeans, MiniBatchKMeans

    kind = MiniBatchKMeans if len(vectors) > options.minibatch_above else KMeans
    extra = {"batch_size": 4096, "max_no_improvement": 20} if kind is MiniBatchKMeans else {}
    model = kind(k, init=previous.centroids, n_init=1, random_state=options.seed, **extra)
    labels = model.fit_predict(vectors).astype(np.int32)
    centroids = model.cluster_centers_.astype(np.float32)
    centroids /= np.clip(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12, None)
    cohesion = float(np.einsum("ij,ij->i", vectors, centroids[labels]).mean())
    if cohesion < previous.cohesion - MAX_COHESION_DROP:
        return (
            None,
            f"{moved}, but the refined clusters are looser (cohesion {previous.cohesion:.3f} → "
            f"{cohesion:.3f}): k chosen anew",
        )
    return (labels, centroids), f"{moved} (k chosen anew above {options.recluster_above:.0%})"


def _carried_labels(
    named: pl.DataFrame, page_rows: pl.DataFrame, previous: PreviousClusters
) -> tuple[pl.DataFrame, int]:
    """The last run's label and terms for each cluster whose members barely moved (a stable name for
    the team), fresh ones for the others."""
    before = previous.members.group_by("cluster_id").agg(pl.col("page_id").alias("before"))
    after = page_rows.group_by("cluster_id").agg(pl.col("page_id").alias("after"))
    overlap = after.join(before, on="cluster_id").with_columns(
        (
            pl.col("after").list.set_intersection("before").list.len()
            / pl.col("after").list.set_union("before").list.len()
        ).alias("jaccard")
    )
    stable = (
        overlap.filter(pl.col("jaccard") >= LABEL_KEPT_ABOVE)
        .select("cluster_id")
        .join(previous.names, on="cluster_id")
    )
    carried = pl.concat([named.join(stable, on="cluster_id", how="anti"), stable.select(named.columns)])
    return distinct_labels(carried.sort("cluster_id")), stable.height
