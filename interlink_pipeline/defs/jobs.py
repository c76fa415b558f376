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


def _tables_by_step(defs: Definitions) -> dict[str, set[AssetKey]]:
    steps_defs = [assets for assets in defs.resolve_asset_graph().assets_defs if assets.is_executable]
    return {assets.node_def.name: assets.keys for assets in steps_defs}


def step_keys(defs: Definitions, steps: list[str]) -> list[AssetKey]:
    """The asset keys (one per table) the named steps write: a run of some steps selects their tables, as
    its config names its ops."""
    by_step = _tables_by_step(defs)
    return [key for step in steps for key in sorted(by_step[step])]


def step_names(defs: Definitions, selection: frozenset[AssetKey] | None) -> list[str]:
    """The steps that write tables in a run of site_pipeline that selected `selection` (None: the whole
    job), in the order they run (an asset check's step goes with its table's)."""
    job = defs.resolve_job_def(site_pipeline_job.name)
    planned = job.get_subset(asset_selection=set(selection)) if selection else job
    writers = _tables_by_step(defs)
    return [node.name for node in planned.graph.nodes_in_topological_order if node.name in writers]
