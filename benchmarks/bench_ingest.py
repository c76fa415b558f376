"""Ingest benchmark: raw_crawl + pages (read, validate, clean, write to DuckDB) against the write-ups'
plain approach (pandas.read_csv of the export, filter, strip one hard-coded brand, drop duplicates).

    python -m benchmarks.bench_ingest [--sizes 100000 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse

from benchmarks.harness import generated_site, measure, print_table, save

PIPELINE = """
import tempfile, time
from pathlib import Path
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse.store import read_site, replace_site_rows
site, path = "www.alpinegear.example", Path({path!r})
warehouse = Path(tempfile.mkdtemp()) / "bench.duckdb"
started = time.monotonic()
raw = read_crawl_export(path, site).frame
rows_in = raw.height
replace_site_rows(warehouse, site, {{"raw.crawl_pages": raw}})
del raw
cleaned = clean_pages(read_site(warehouse, "raw.crawl_pages", site), site)
staging = {{"staging.pages": cleaned.pages, "staging.excluded_pages": cleaned.excluded}}
replace_site_rows(warehouse, site, staging)
seconds = time.monotonic() - started
import polars as pl
truth = set(pl.read_csv(path.parent / "ground_truth.csv")["url"])
wrong = len(truth.symmetric_difference(cleaned.pages["url"].to_list()))
RESULT = {{"seconds": seconds, "rows_in": rows_in, "pages": cleaned.pages.height, "wrong": wrong}}
"""

BASELINE = """
import time
import pandas as pd
started = time.monotonic()
df = pd.read_csv({path!r})
rows_in = len(df)
df = df[df["Content Type"].str.contains("text/html", na=False) & (df["Status Code"] == 200)
        & (df["Indexability"] == "Indexable")]
df["Title 1"] = df["Title 1"].replace({{r" \\| Alpine Gear": "", " - Alpine Gear": ""}}, regex=True)
df = df.drop_duplicates(subset="Address")
seconds = time.monotonic() - started
truth = set(pd.read_csv({path!r}.replace("internal_all.csv", "ground_truth.csv"))["url"])
wrong = len(truth.symmetric_difference(df["Address"]))
RESULT = {{"seconds": seconds, "rows_in": rows_in, "pages": len(df), "wrong": wrong}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows, payload = [], {}
    for size in args.sizes:
        path = str(generated_site(size) / "internal_all.csv")
        ours = measure("pipeline", size, PIPELINE.format(path=path), args.repeats)
        plain = measure("pandas baseline", size, BASELINE.format(path=path), args.repeats)
        for m in (ours, plain):
            rows.append(
                [
                    f"{size:,}",
                    m.label,
                    f"{m.runs[0]['rows_in']:,}",
                    f"{m.median('seconds'):.1f}",
                    m.spread("seconds"),
                    f"{m.median('peak_rss_mb'):,.0f}",
                    f"{m.runs[0]['pages']:,}",
                    f"{m.runs[0]['wrong']:,}",
                ]
            )
        rows.append(
            [
                "",
                "ratio pipeline/baseline",
                "",
                f"{ours.median('seconds') / plain.median('seconds'):.2f}×",
                "",
                f"{ours.median('peak_rss_mb') / plain.median('peak_rss_mb'):.2f}×",
                "",
                "",
            ]
        )
        payload[size] = {"pipeline": ours.runs, "baseline": plain.runs}
    print_table(
        f"Ingest (raw_crawl + pages), median of {args.repeats} runs, fresh process each",
        rows,
        [
            "pages",
            "method",
            "crawl rows",
            "median s",
            "range s",
            "peak RSS MB",
            "pages kept",
            "wrong vs truth",
        ],
    )
    print(f"\nraw results: {save('ingest', payload)}")


if __name__ == "__main__":
    main()
