"""page_embeddings: one vector per page, through the global embedding cache."""

import time
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, Config, ConfigurableResource, MetadataValue
from pydantic import Field

from interlink_pipeline.core.environment import Environment, environment
from interlink_pipeline.core.ml.encoders import EncoderSettings, SiteEncoder
from interlink_pipeline.core.ml.int8_check import site_settings
from interlink_pipeline.core.ml.model_identity import DEFAULT_MODEL, ModelIdentity
from interlink_pipeline.core.ml.page_embeddings import DEFAULT_CHUNK, embed_site
from interlink_pipeline.core.warehouse.contract import ContractError
from interlink_pipeline.defs.groups import ML
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import failed_checks, materialized, user_errors


class Embedder(settings_config(EncoderSettings, ConfigurableResource)):
    """The sentence-transformers model that embeds page texts (loaded once per process, offline)."""

    def settings(self) -> EncoderSettings:
        return options_from(self, EncoderSettings)

    def for_site(self, warehouse: str | Path, site: str) -> SiteEncoder:
        """The encoder of `site`'s vectors, int8 decided for it (int8_check.site_settings)."""
        return SiteEncoder(site_settings(warehouse, site, self.settings()))


def default_embedder(env: Environment | None = None) -> Embedder:
    env = env or environment()
    return Embedder(model=env.embedding_model or DEFAULT_MODEL, device=env.embedding_device or "auto")


class PageEmbeddingsConfig(Config):
    chunk_size: int = Field(
        default=DEFAULT_CHUNK, gt=0, description="Texts embedded and committed to the cache at a time."
    )


@site_asset("ml.page_embeddings", group=ML, deps=["staging.pages"], kinds={"duckdb", "pytorch", "onnx"})
def page_embeddings(
    context: AssetExecutionContext, config: PageEmbeddingsConfig, warehouse: Warehouse, embedder: Embedder
):
    """Unit-norm vectors of each page's text; only texts not yet in ml.embedding_cache are embedded."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        encoder = embedder.for_site(warehouse.path, site)
        identity = encoder.identity()
        context.log.info(f"model {identity.model_id} on {identity.device}")

        def progress(done: int, total: int) -> None:
            context.log.info(f"{site}: embedded {done:,} of {total:,} new texts")

        try:
            run = embed_site(
                warehouse.path,
                site,
                identity.model_id,
                encoder.encoder,
                int8_falls_back=embedder.int8 == "auto",
                chunk_size=config.chunk_size,
                progress=progress,
            )
        except ContractError as exc:
            yield from failed_checks(site, exc)
    sample = warehouse.read_site("ml.page_embeddings", site, ["page_id", "vector"]).head(5)
    preview = sample.with_columns(
        pl.col("vector").list.head(4).cast(pl.List(pl.String)).list.join(", ") + ", …"
    )
    metadata = {
        "model": run.model_id,
        "device": identity.device,
        "backend": run.encoder.backend if run.encoder else "not loaded: every text was cached",
        "dim": int(sample["vector"].list.len()[0]) if sample.height else 0,
        "pages": run.pages,
        "distinct_texts": run.distinct_texts,
        "cache_hits": run.cache_hits,
        "texts_embedded": run.embedded,
        "vectors_rewritten": run.report.rows,
        "cache_hit_rate": MetadataValue.float(run.cache_hits / max(1, run.distinct_texts)),
        "texts_per_second": MetadataValue.float(run.texts_per_second),
        "embed_seconds": MetadataValue.float(run.embed_seconds),
        "model_load_seconds": MetadataValue.float(run.load_seconds),
        "chunks_committed": run.chunks,
        "precision": run.int8.said() if run.int8 else _precision(run.model_id, identity.device),
        **({"int8_neighbour_recall": MetadataValue.float(run.int8.recall)} if run.int8 else {}),
        "preview": table_preview(preview),
    }
    yield from materialized(context, site, {"ml.page_embeddings": run.report}, metadata, started)


def _precision(model_id: str, device: str) -> str:
    """The vectors' precision where no int8 check ran this time."""
    precision = ModelIdentity.precision(model_id)
    if precision == "int8":
        return "int8: the site's vectors are int8's (checked when they were embedded)"
    return precision if precision == "fp16" else f"fp32 on {device}"
