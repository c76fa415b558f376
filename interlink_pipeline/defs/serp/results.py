"""serp_results: search-engine evidence: the pages a search engine ranks for each page's main query."""

import time
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, ConfigurableResource, EnvVar, MetadataValue
from pydantic import Field

from interlink_pipeline.core.environment import SERPER_KEY_ENV, Environment, environment
from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.ingest.crawl_exports import read_queries_export
from interlink_pipeline.core.serp.evidence import SerpRun, serp_evidence
from interlink_pipeline.core.serp.local_index import KeptIndex
from interlink_pipeline.core.serp.options import SERPER_ENDPOINT, SerpOptions
from interlink_pipeline.core.serp.queries import top_queries
from interlink_pipeline.defs.groups import RELEVANCE
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import persist, user_errors


class SerpApi(ConfigurableResource):
    """Serper's search API. The key comes from $SERPER_API_KEY and is never logged or stored."""

    api_key: str | None = Field(
        default=None, description="Set through the SERPER_API_KEY environment variable."
    )
    endpoint: str = Field(default=SERPER_ENDPOINT, description="Search endpoint (default: Serper's).")


def default_serp_api(env: Environment | None = None) -> SerpApi:
    """The key as an EnvVar reference (so the UI shows the variable's name, never its value)."""
    env = env or environment()
    return SerpApi(
        api_key=EnvVar(SERPER_KEY_ENV) if env.serper_api_key else None,
        endpoint=env.serper_endpoint or SERPER_ENDPOINT,
    )


class SerpResultsConfig(settings_config(SerpOptions)):
    queries_file: str | None = Field(
        default=None,
        description="Queries file in the drop folder; default: the newest '*quer*'/'*keyword*' file.",
    )
    queries_column_map: dict[str, str] = Field(
        default_factory=dict, description="Field -> header for that file."
    )


@site_asset("serp.results", group=RELEVANCE, deps=["staging.pages"], kinds={"duckdb", "httpx"})
def serp_results(
    context: AssetExecutionContext,
    config: SerpResultsConfig,
    warehouse: Warehouse,
    inbox: CrawlInbox,
    serp_api: SerpApi,
):
    """For each page's main query (or title), the pages the search engine ranks, matched to the crawl."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        site_pages = warehouse.read_site_required("staging.pages", site, "pages")
        queries_path, main_queries = _main_queries(inbox, site, config)
        options = options_from(config, SerpOptions, endpoint=serp_api.endpoint)
        index_path = warehouse.kept_state(site) / "local_search.joblib"
        results, run = serp_evidence(
            warehouse.path,
            site,
            site_pages,
            options,
            serp_api.api_key,
            main_queries,
            load_state(index_path, KeptIndex),
        )
    context.log.info(
        f"{site}: {run.provider}: {run.queries:,} queries, {run.cache_hits:,} cached, "
        f"{run.fetch.requests_sent:,} requests sent, {len(run.fetch.failures)} failed"
    )
    metadata = _metadata(run, results, options, queries_path)
    yield from persist(context, warehouse, site, {"serp.results": results}, metadata, started)
    if run.index is not None:  # after the write: a run that fails keeps the last index
        save_state(run.index, index_path)


def _main_queries(
    inbox: CrawlInbox, site: str, config: SerpResultsConfig
) -> tuple[Path | None, pl.DataFrame | None]:
    """The site's queries file, if there is one, and its top query per page."""
    path = inbox.queries_file(site, config.queries_file)
    if not path:
        return None, None
    return path, top_queries(read_queries_export(path, column_map=config.queries_column_map))


def _metadata(run: SerpRun, results: pl.DataFrame, options: SerpOptions, queries_path: Path | None) -> dict:
    """What the run asked, paid and found, and the local index's reuse, for the materialisation."""
    matched = int(results["matched_page_id"].is_not_null().sum())
    metadata = {
        "provider": run.provider,
        "pages": run.pages,
        "queries": run.queries,
        "query_sources": table_preview(
            pl.DataFrame({"source": list(run.query_sources), "pages": list(run.query_sources.values())})
        ),
        "queries_file": MetadataValue.path(str(queries_path)) if queries_path else "none",
        "cache_hits": run.cache_hits,
        "requests_sent": run.fetch.requests_sent,
        "billed_requests": run.fetch.billed,
        "retries": run.fetch.retries,
        "failed_requests": len(run.fetch.failures),
        "cost_estimate_usd": MetadataValue.float(run.cost_usd(options)),
        "results": results.height,
        "matched_results": matched,
        "unmatched_results": results.height - matched,
        "excluded_results": run.excluded_results,
        "preview": table_preview(results.select("query", "rank", "result_url", "matched_page_id")),
    }
    if run.search is not None:
        metadata |= {
            "index": run.search.mode,
            "index_why": run.search.why,
            "queries_searched": run.search.pages_searched,
            "queries_reused": run.search.pages_merged,
            "pages_changed": run.search.pages_changed,
        }
        if run.search.search is not None:
            metadata["search"] = run.search.search.described()
    return metadata
