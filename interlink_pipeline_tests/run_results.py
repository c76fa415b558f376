"""Runs in-process for the tests, and what they read off them: the failure's message, a materialisation's
metadata."""

import dagster as dg

from interlink_pipeline.definitions import build_defs
from interlink_pipeline_tests.conftest import LIGHT

SERP_ONLY = [dg.AssetKey(k) for k in ("raw_crawl", "pages", "serp_results")]
FAST = {"backoff_base_s": 0.05, "backoff_max_s": 0.2, "timeout_s": 2.0}


def run_serp(warehouse_path, inbox, instance, serp_api, config=None, selection=SERP_ONLY, site=LIGHT):
    """`selection` (up to serp_results) for `site` with `serp_api`, retries fast, `config` on serp_results."""
    defs = build_defs(str(warehouse_path), str(inbox), serp_api=serp_api)
    if not instance.has_dynamic_partition("sites", site):
        instance.add_dynamic_partitions("sites", [site])
    run_config = {"ops": {"serp_results": {"config": {**FAST, **(config or {})}}}}
    return defs.resolve_job_def("site_pipeline").execute_in_process(
        partition_key=site,
        instance=instance,
        run_config=run_config,
        raise_on_error=False,
        asset_selection=selection,
    )


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.event_specific_data.error.message


def materialization_metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    """{name: value} of `asset`'s (first) materialisation in the run."""
    metadata = next(
        e.event_specific_data.materialization.metadata
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == dg.AssetKey(asset)
    )
    return {name: entry.value for name, entry in metadata.items()}
