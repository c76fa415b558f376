"""Similarity and clustering benchmark, and the quality report.

Speed: exact top-15 (blocked, the pipeline's rules included) against the full n x n matrix, at the sizes the
matrix survives; the ANN path at 1M pages with its recall@15 against exact; k-means with k chosen at 100k.
Quality: clusters against nutrisport's 22 product categories and the generated site's 20 topics; similar
pairs against lightchiropractic's 52 editorial content links and the generated topics; each against the
write-ups' plain approach (uncleaned titles, k-means k=15, most-frequent-word names, full matrix top-15),
and the min_score sweep behind the default.

    python -m benchmarks.bench_similarity [--sizes 10000 100000] [--baseline-sizes 10000 30000 50000]
                                          [--million WAREHOUSE] [--repeats 3]
                                          [--skip speed quality]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

import numpy as np
import polars as pl

from benchmarks.harness import (
    DATA,
    SAMPLE_DIR,
    SHARED_CRAWLS,
    generated_site,
    materialize_snippet,
    measure,
    print_table,
    save,
)

SITE = "www.alpinegear.example"
RAM_GB = 24

EXACT = """
import time, numpy as np, polars as pl
from interlink_pipeline.core.ml.similarity import SimilarityOptions, similar_pairs
vectors = np.load({path!r})
ids = pl.Series([f"{{i:016x}}" for i in range(len(vectors))])
started = time.monotonic()
paths = pl.Series(["/"] * len(vectors))
pairs, stats = similar_pairs(ids, paths, vectors, SimilarityOptions(method={method!r}))
RESULT = {{"seconds": time.monotonic() - started, "pairs": pairs.height, "recall": stats.recall_at_k,
          "method": stats.method}}
"""

FULL_MATRIX = """
import time, numpy as np
vectors = np.load({path!r})
started = time.monotonic()
scores = vectors @ vectors.T
np.fill_diagonal(scores, -np.inf)
top = np.argpartition(-scores, 15, axis=1)[:, :15]
RESULT = {{"seconds": time.monotonic() - started}}
"""

KMEANS = """
import time, numpy as np, polars as pl
from interlink_pipeline.core.ml.clusters import topic_clusters
vectors = np.load({path!r})
texts = pl.read_parquet({texts!r})["text"]
ids = pl.Series([f"{{i:016x}}" for i in range(len(vectors))])
started = time.monotonic()
pages, clusters, stats = topic_clusters(ids, texts, vectors)
RESULT = {{"seconds": time.monotonic() - started, "k": stats.k}}
"""

# What is read off the run after similarity_pairs was materialised (see harness.materialize_snippet).
MILLION_RESULT = """
materialization = result.asset_materializations_for_node("similarity_pairs")[0]
meta = {k: v.value for k, v in materialization.metadata.items()}
RESULT = {"seconds": seconds, "search_s": meta["search_seconds"], "recall": meta["recall_at_k"],
          "method": meta["method"], "pairs": meta["rows ml.similarity_pairs"], "failed_checks": failed_checks}
"""


def texts_and_vectors(pages: int) -> tuple[str, str]:
    """A generated site's page texts and their vectors (embedded once with the pipeline's encoder)."""
    vectors = DATA / f"vectors-{pages}.npy"
    texts = DATA / f"page-texts-{pages}.parquet"
    if not vectors.exists():
        from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
        from interlink_pipeline.core.ingest.pages import clean_pages
        from interlink_pipeline.core.ml.encoders import EncoderSettings, load_encoder

        frame = clean_pages(
            read_crawl_export(generated_site(pages) / "internal_all.csv", SITE).frame, SITE
        ).pages
        frame.select("page_id", "url", "text").write_parquet(texts)
        print(f"embedding {frame.height:,} texts once for the benchmark …", flush=True)
        np.save(vectors, load_encoder(EncoderSettings()).encode(frame["text"].to_list()))
    return str(vectors), str(texts)


# --- the write-ups' plain approach ------------------------------------------------------------------

PLAIN_STOP = {
    "the",
    "a",
    "an",
    "and",
    "or",
    "of",
    "for",
    "to",
    "in",
    "on",
    "with",
    "your",
    "you",
    "is",
    "are",
    "how",
    "what",
    "why",
    "best",
    "-",
    "|",
    ":",
}


def plain_name(titles: list[str]) -> str:
    """The k-means script's naming: the single most frequent non-stop-word (NLTK English list)."""
    words = [w for t in titles for w in re.findall(r"\w+", t.lower()) if w not in PLAIN_STOP]
    return Counter(words).most_common(1)[0][0] if words else ""


def plain_clusters(vectors: np.ndarray, k: int = 15) -> np.ndarray:
    from sklearn.cluster import KMeans

    return KMeans(k, random_state=0, n_init=1).fit_predict(vectors)


def plain_top15(vectors: np.ndarray) -> np.ndarray:
    scores = vectors @ vectors.T
    np.fill_diagonal(scores, -np.inf)
    return np.argsort(-scores, axis=1)[:, :15]


def purity_nmi(labels: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    from sklearn.metrics import normalized_mutual_info_score

    frame = pl.DataFrame({"c": labels, "t": truth})
    top = frame.group_by("c").agg(pl.col("t").value_counts(sort=True).first().struct.field("count"))
    return float(top["count"].sum() / len(labels)), float(normalized_mutual_info_score(truth, labels))


def encode(texts: list[str]) -> np.ndarray:
    from interlink_pipeline.core.ml.encoders import EncoderSettings, load_encoder

    return load_encoder(EncoderSettings()).encode(texts)


def quality_report() -> tuple[list[list[str]], list[list[str]], list[list[str]], dict]:
    from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
    from interlink_pipeline.core.ingest.pages import clean_pages
    from interlink_pipeline.core.ml.clusters import ClusterOptions, topic_clusters
    from interlink_pipeline.core.ml.similarity import SimilarityOptions, similar_pairs

    cluster_rows, pair_rows, sweep_rows, payload = [], [], [], {}

    def ours_clusters(frame: pl.DataFrame) -> tuple[np.ndarray, pl.DataFrame, int]:
        rows, named, stats = topic_clusters(
            frame["page_id"], frame["text"], encode(frame["text"].to_list()), ClusterOptions()
        )
        return rows["cluster_id"].to_numpy(), named, stats.k

    # nutrisport: clusters of the product pages against their 22 categories
    export = SHARED_CRAWLS / "nutrisport/internal_html.csv"
    raw = read_crawl_export(export, "nutrisport.es").frame
    pages = clean_pages(raw, "nutrisport.es").pages
    truth = pl.read_csv(SHARED_CRAWLS / "nutrisport/ground_truth_url_sections.csv")
    labels, named, k = ours_clusters(pages)
    products = pages.with_columns(pl.Series("cluster", labels)).join(
        truth.filter(pl.col("page_type") == "product").select(
            pl.col("Address").alias("crawled_url"), "category"
        ),
        on="crawled_url",
    )
    purity, nmi = purity_nmi(products["cluster"].to_numpy(), products["category"].to_numpy())
    sample_labels = ", ".join(named.sort("size", descending=True)["label"].head(6))
    cluster_rows.append(
        [
            "nutrisport products (22 categories)",
            "pipeline",
            str(k),
            f"{purity:.3f}",
            f"{nmi:.3f}",
            sample_labels,
        ]
    )
    plain = raw.filter(
        (pl.col("status_code") == 200)
        & (pl.col("indexability") == "Indexable")
        & pl.col("content_type").str.contains("html")
    )
    plain_titles = plain["title"].fill_null("").to_list()
    plain_labels = plain_clusters(encode(plain_titles))
    plain_frame = plain.select("url").with_columns(
        pl.Series("cluster", plain_labels), pl.Series("title", plain_titles)
    )
    plain_products = plain_frame.join(
        truth.filter(pl.col("page_type") == "product").select(pl.col("Address").alias("url"), "category"),
        on="url",
    )
    purity, nmi = purity_nmi(plain_products["cluster"].to_numpy(), plain_products["category"].to_numpy())
    names = (
        plain_frame.group_by("cluster").agg(pl.col("title")).sort(pl.col("title").list.len(), descending=True)
    )
    cluster_rows.append(
        [
            "nutrisport products (22 categories)",
            "plain (titles, k=15)",
            "15",
            f"{purity:.3f}",
            f"{nmi:.3f}",
            ", ".join(plain_name(t) for t in names["title"].head(6)),
        ]
    )

    # the generated site: clusters and pairs against its 20 topics
    raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SITE).frame
    pages = clean_pages(raw, SITE).pages
    site_truth = pl.read_csv(SAMPLE_DIR / "ground_truth.csv")
    labels, named, k = ours_clusters(pages)
    topical = (
        pages.with_columns(pl.Series("cluster", labels))
        .join(site_truth, on="url")
        .filter(pl.col("topic") != "")
    )
    purity, nmi = purity_nmi(topical["cluster"].to_numpy(), topical["topic"].to_numpy())
    cluster_rows.append(
        [
            "generated sample (20 topics)",
            "pipeline",
            str(k),
            f"{purity:.3f}",
            f"{nmi:.3f}",
            ", ".join(named.sort("size", descending=True)["label"].head(6)),
        ]
    )
    plain = raw.filter(
        (pl.col("status_code") == 200)
        & (pl.col("indexability") == "Indexable")
        & pl.col("content_type").str.contains("html")
    )
    plain_titles = plain["title"].fill_null("").to_list()
    plain_vectors = encode(plain_titles)
    plain_labels = plain_clusters(plain_vectors)
    plain_frame = plain.select("url").with_columns(
        pl.Series("cluster", plain_labels), pl.Series("title", plain_titles)
    )
    plain_topical = plain_frame.join(site_truth, on="url").filter(pl.col("topic") != "")
    purity, nmi = purity_nmi(plain_topical["cluster"].to_numpy(), plain_topical["topic"].to_numpy())
    names = (
        plain_frame.group_by("cluster").agg(pl.col("title")).sort(pl.col("title").list.len(), descending=True)
    )
    cluster_rows.append(
        [
            "generated sample (20 topics)",
            "plain (titles, k=15)",
            "15",
            f"{purity:.3f}",
            f"{nmi:.3f}",
            ", ".join(plain_name(t) for t in names["title"].head(6)),
        ]
    )

    vectors = encode(pages["text"].to_list())
    topic_of = dict(zip(site_truth["url"], site_truth["topic"], strict=True))
    page_topic = pages["url"].replace_strict(topic_of, default="").to_numpy()
    ours, _ = similar_pairs(pages["page_id"], pages["path"], vectors, SimilarityOptions())
    ours = ours.filter(pl.col("relation") == "similar")
    index = {pid: i for i, pid in enumerate(pages["page_id"])}
    src = ours["source_page_id"].replace_strict(index).to_numpy()
    dst = ours["target_page_id"].replace_strict(index).to_numpy()
    keep = page_topic[src] != ""
    precision = float((page_topic[src] == page_topic[dst])[keep].mean())
    targets = Counter(dst.tolist())
    pair_rows.append(
        [
            "generated sample: same-topic share of pairs",
            "pipeline",
            f"{precision:.3f}",
            f"most-suggested target gets {max(targets.values())}",
        ]
    )
    plain_top = plain_top15(plain_vectors)
    plain_topic = plain_frame.join(site_truth, on="url", how="left")["topic"].fill_null("").to_numpy()
    src = np.repeat(np.arange(len(plain_top)), 15)
    dst = plain_top.reshape(-1)
    keep = plain_topic[src] != ""
    precision = float((plain_topic[src] == plain_topic[dst])[keep].mean())
    targets = Counter(dst.tolist())
    pair_rows.append(
        [
            "generated sample: same-topic share of pairs",
            "plain (titles, full matrix top-15)",
            f"{precision:.3f}",
            f"most-suggested target gets {max(targets.values())}",
        ]
    )

    # lightchiropractic: the 52 editorial content links, hidden, recovered in the top-k
    export = SHARED_CRAWLS / "lightchiropractic/internal_all.csv"
    raw = read_crawl_export(export, "www.lightchiropractic.sg").frame
    pages = clean_pages(raw, "www.lightchiropractic.sg").pages
    links = pl.read_csv(SHARED_CRAWLS / "lightchiropractic/content_links.csv").filter(
        ~pl.col("navigational_or_utility")
    )
    by_url = dict(zip(pages["crawled_url"], pages["page_id"], strict=True))
    gold = {
        (by_url[s], by_url[d])
        for s, d in zip(links["Source"], links["Destination"], strict=True)
        if s in by_url and d in by_url and s != d
    }
    vectors = encode(pages["text"].to_list())
    for min_score in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7):
        pairs, _ = similar_pairs(
            pages["page_id"],
            pages["path"],
            vectors,
            SimilarityOptions(min_score=min_score, max_per_target=None),
        )
        found = set(zip(pairs["source_page_id"], pairs["target_page_id"], strict=True))
        either = sum((s, t) in found or (t, s) in found for s, t in gold)
        sweep_rows.append(
            [
                "lightchiropractic",
                f"{min_score:.1f}",
                f"{sum(p in found for p in gold)}/{len(gold)}",
                f"{either}/{len(gold)}",
                f"{pairs.height:,}",
                f"{len(pages) - pairs['source_page_id'].n_unique()}",
            ]
        )
    pairs, _ = similar_pairs(pages["page_id"], pages["path"], vectors, SimilarityOptions())
    found = set(zip(pairs["source_page_id"], pairs["target_page_id"], strict=True))
    pair_rows.append(
        [
            "lightchiropractic: editorial links in top-15 (of 52 pairs)",
            "pipeline",
            f"{sum(p in found for p in gold)}/{len(gold)}",
            "directed, min_score default",
        ]
    )
    plain = raw.filter(
        (pl.col("status_code") == 200)
        & (pl.col("indexability") == "Indexable")
        & pl.col("content_type").str.contains("html")
    )
    plain_top = plain_top15(encode(plain["title"].fill_null("").to_list()))
    position = {u: i for i, u in enumerate(plain["url"])}
    plain_found = sum(
        position[d] in plain_top[position[s]]
        for s, d in zip(links["Source"], links["Destination"], strict=True)
        if s in position and d in position and s != d
    )
    pair_rows.append(
        [
            "lightchiropractic: editorial links in top-15 (of 52 pairs)",
            "plain (titles, full matrix)",
            f"{plain_found}/{len(gold)}",
            "directed, no threshold",
        ]
    )

    # nutrisport: how the threshold trades coverage for same-category precision
    raw = read_crawl_export(SHARED_CRAWLS / "nutrisport/internal_html.csv", "nutrisport.es").frame
    pages = clean_pages(raw, "nutrisport.es").pages
    vectors = encode(pages["text"].to_list())
    category = dict(zip(truth["Address"], truth["category"].fill_null(""), strict=True))
    page_category = pages["crawled_url"].replace_strict(category, default="").to_numpy()
    index = {pid: i for i, pid in enumerate(pages["page_id"])}
    for min_score in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7):
        pairs, _ = similar_pairs(
            pages["page_id"],
            pages["path"],
            vectors,
            SimilarityOptions(min_score=min_score, max_per_target=None),
        )
        src = pairs["source_page_id"].replace_strict(index).to_numpy()
        dst = pairs["target_page_id"].replace_strict(index).to_numpy()
        keep = (page_category[src] != "") & (page_category[dst] != "")
        precision = float((page_category[src] == page_category[dst])[keep].mean()) if keep.any() else 0.0
        sweep_rows.append(
            [
                "nutrisport",
                f"{min_score:.1f}",
                f"same category {precision:.3f}",
                "",
                f"{pairs.height:,}",
                f"{len(pages) - pairs['source_page_id'].n_unique()}",
            ]
        )
    payload["clusters"] = cluster_rows
    payload["pairs"] = pair_rows
    payload["sweep"] = sweep_rows
    return cluster_rows, pair_rows, sweep_rows, payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--baseline-sizes", type=int, nargs="+", default=[10_000, 30_000, 50_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--million", help="a DuckDB file with a 1M-page site's staging.pages and embeddings")
    parser.add_argument("--skip", nargs="+", choices=["speed", "quality"], default=[], help="parts not run")
    args = parser.parse_args()
    payload: dict = {}
    speed_rows = [] if "speed" in args.skip else speed(args, payload)
    if args.million:
        speed_rows.append(million(args.million, payload))
    if speed_rows:
        print_table(
            f"Similarity and clustering speed on CPU, median of {args.repeats} runs",
            speed_rows,
            ["pages", "method", "median s", "range s", "peak RSS MB"],
        )
    if "quality" not in args.skip:
        clusters, pairs, sweep, quality = quality_report()
        payload["quality"] = quality
        print_table(
            "Clusters against ground truth",
            clusters,
            ["site", "method", "k", "purity", "NMI", "largest clusters"],
        )
        print_table("Similar pairs against ground truth", pairs, ["measure", "method", "value", "note"])
        print_table(
            "min_score sweep (k=15, no per-target cap)",
            sweep,
            [
                "site",
                "min_score",
                "editorial links found / same-category share",
                "either direction",
                "pairs",
                "pages without any pair",
            ],
        )
    print(f"\nraw results: {save('similarity', payload)}")


def million(warehouse: str, payload: dict) -> list[str]:
    """The similarity_pairs asset materialised on a 1M-page warehouse, once."""
    run = measure(
        "similarity_pairs, 1M pages (ANN)",
        1_000_000,
        materialize_snippet(warehouse, SITE, "similarity_pairs", {}, MILLION_RESULT),
        1,
    ).runs[0]
    payload["million"] = run
    if run["failed_checks"]:
        raise RuntimeError(f"similarity_pairs at 1M pages failed checks: {run['failed_checks']}")
    return [
        "1,000,000",
        f"similarity_pairs asset, {run['method']}, recall@15 {run['recall']:.3f}, {run['pairs']:,} pairs",
        f"{run['seconds']:.0f}",
        f"search {run['search_s']:.0f} / read, rules, checks, write {run['seconds'] - run['search_s']:.0f}",
        f"{run['peak_rss_mb']:,.0f}",
    ]


def speed(args: argparse.Namespace, payload: dict) -> list[list[str]]:
    """Exact top-15 against the full matrix at each size, and k-means at the largest."""
    speed_rows = []
    for size in sorted(set(args.sizes) | set(args.baseline_sizes)):
        path, texts = texts_and_vectors(size)
        n = len(np.load(path, mmap_mode="r"))
        if size in args.sizes:
            ours = measure(
                "exact top-15 (pipeline)", size, EXACT.format(path=path, method="exact"), args.repeats
            )
            speed_rows.append(
                [
                    f"{n:,}",
                    ours.label,
                    f"{ours.median('seconds'):.1f}",
                    ours.spread("seconds"),
                    f"{ours.median('peak_rss_mb'):,.0f}",
                ]
            )
            payload[f"exact-{size}"] = ours.runs
        if size in args.baseline_sizes:
            # the n x n scores, their negation and argpartition's n x n int64 indices
            needed_gb = 16 * n * n / 1024**3
            if needed_gb > 0.7 * RAM_GB:
                speed_rows.append([f"{n:,}", "full matrix (baseline)", "-", "-", f"needs {needed_gb:.0f} GB"])
                continue
            try:
                plain = measure("full matrix (baseline)", size, FULL_MATRIX.format(path=path), args.repeats)
            except RuntimeError:
                speed_rows.append([f"{n:,}", "full matrix (baseline)", "-", "-", "killed (out of memory)"])
                continue
            speed_rows.append(
                [
                    f"{n:,}",
                    plain.label,
                    f"{plain.median('seconds'):.1f}",
                    plain.spread("seconds"),
                    f"{plain.median('peak_rss_mb'):,.0f}",
                ]
            )
            payload[f"full-{size}"] = plain.runs
    largest = max(args.sizes)
    path, texts = texts_and_vectors(largest)
    km = measure(
        "topic_clusters (k by silhouette)", largest, KMEANS.format(path=path, texts=texts), args.repeats
    )
    speed_rows.append(
        [
            f"{largest:,}",
            f"{km.label}, k={km.runs[0]['k']}",
            f"{km.median('seconds'):.1f}",
            km.spread("seconds"),
            f"{km.median('peak_rss_mb'):,.0f}",
        ]
    )
    payload["kmeans"] = km.runs
    return speed_rows


if __name__ == "__main__":
    main()
