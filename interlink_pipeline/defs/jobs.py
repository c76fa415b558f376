"""Jobs."""

from dagster import AssetKey, AssetSelection, Definitions, define_asset_job, in_process_executor

# The whole per-site pipeline. Steps run in one process: the embedding model loads once per run, and
# DuckDB writes are serialised anyway (one writer per file).
site_pipeline_job = define_asset_job(
    "site_pipeline",
    selection=AssetSelection.all(),
    executor_def=in_process_executor,
    description="Everything for one site: crawl → pages → … → link plan.",
)


def step_keys(defs: Definitions, steps: list[str]) -> list[AssetKey]:
    """The asset keys (one per table) the named steps write: a run of some steps selects their tables, as
    its config names its ops."""
    steps_defs = [assets for assets in defs.resolve_asset_graph().assets_defs if assets.is_executable]
    by_step = {assets.node_def.name: assets.keys for assets in steps_defs}
    return [key for step in steps for key in sorted(by_step[step])]
