"""Jobs."""

from dagster import AssetSelection, define_asset_job, in_process_executor

# The whole per-site pipeline. Steps run in one process: the embedding model loads once per run, and
# DuckDB writes are serialised anyway (one writer per file).
site_pipeline_job = define_asset_job(
    "site_pipeline",
    selection=AssetSelection.all(),
    executor_def=in_process_executor,
    description="Everything for one site: crawl → pages → … → link plan.",
)
