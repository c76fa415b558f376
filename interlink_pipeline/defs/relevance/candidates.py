"""link_candidates: every pair some signal proposes, scored by the site's ranker; after a re-crawl only what
the changes touch is built and written again."""

import time

import polars as pl
from dagster import AssetExecutionContext, Config
from pydantic import Field

from interlink_pipeline.core.relevance.candidate_updates import (
    KEY,
    PAGE_STATE,
    STORED,
    KeptCandidates,
    score_candidates,
    settings_hash,
)
from interlink_pipeline.core.relevance.kept_ranker import load_ranker, ranker_path
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder
from interlink_pipeline.core.relevance.site_inputs import RELEVANCE_TABLES, relevance_inputs
from interlink_pipeline.core.warehouse.database import files_folder
from interlink_pipeline.core.warehouse.store import SpilledRows
from interlink_pipeline.defs.groups import RELEVANCE
from interlink_pipeline.defs.ml.embeddings import Embedder
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.relevance.ranker import CandidateSettings
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import persist, user_errors, with_site


def _kept_candidates(warehouse: Warehouse, site: str) -> KeptCandidates:
    """The site's last candidate build, as stored: an incremental build starts from it, reading its rows
    a chunk of source pages at a time."""

    def rows_from(sources: pl.Series) -> pl.DataFrame:
        matching = pl.DataFrame({"source_page_id": sources})
        return warehouse.read_site("ml.link_candidates", site, [*KEY, *STORED], matching=matching)

    return KeptCandidates(warehouse.read_site("ml.candidate_pages", site, list(PAGE_STATE)), rows_from)


class LinkCandidatesConfig(Config):
    rebuild: bool = Field(
        default=False,
        description="Build every pair anew; by default a re-crawl recomputes only what its changes touch.",
    )


@site_asset(
    "ml.link_candidates",
    "ml.candidate_pages",
    group=RELEVANCE,
    deps=["ml.link_ranker_runs", *RELEVANCE_TABLES],
)
def link_candidates(
    context: AssetExecutionContext,
    config: LinkCandidatesConfig,
    warehouse: Warehouse,
    embedder: Embedder,
    candidate_settings: CandidateSettings,
):
    """Every pair some signal proposes (text fields, URL hierarchy, link graph, phrases, SERP), each
    signal's score kept, and the ranker's probability that the site's editors would link it. After a
    re-crawl only the pairs of changed pages get their features again, and only changed rows are scored
    and written (the same rows as a full build)."""
    started = time.monotonic()
    site = site_key(context)
    # a full build's rows go to disk a chunk at a time, and into the table in one transaction
    spill_folder = files_folder(warehouse.path) / "spill"
    with user_errors(), SpilledRows("ml.link_candidates", site, spill_folder) as spilled:
        kept_ranker = load_ranker(ranker_path(warehouse, site), site)
        encoder = embedder.for_site(warehouse.path, site)
        model_id = encoder.identity().model_id
        inputs = relevance_inputs(warehouse, site, model_id, encoder.encoder)
        builder = CandidateBuilder(inputs.signals, candidate_settings.options())
        kept = None if config.rebuild else _kept_candidates(warehouse, site)
        scored = score_candidates(
            builder,
            inputs.links,
            inputs.pages["page_id"],
            kept_ranker.ranker.probability,
            kept_ranker.run_id,
            settings_hash(builder, model_id),
            spilled,
            kept,
        )
        summary = scored.summary
        metadata = {
            "candidates": summary.candidates,
            "ranker": kept_ranker.ranker.reason,
            **scored.build_summary(),
            "by_origin": table_preview(summary.by_origin(), 10),
            "pages_with_candidates": summary.per_source().height,
            "pages_with_body_text": int(inputs.pages["body_text"].is_not_null().sum()),
            "texts_embedded": inputs.embedded,
            "text_neighbours": builder.searches_done(),
            "likely_links": summary.likely,
            "preview": table_preview(summary.most_probable(inputs.pages), 15),
        }
        frames = {
            "ml.link_candidates": with_site(scored.write, site),
            "ml.candidate_pages": with_site(scored.pages, site),
        }
        yield from persist(context, warehouse, site, frames, metadata, started)
