"""Sites are dynamic partitions keyed by their normalised host."""

import warnings

from dagster import AssetExecutionContext, DynamicPartitionsDefinition, PreviewWarning

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.urls import normalize_host
from interlink_pipeline.defs.site_runs import SITE_PARTITIONS

site_partitions = DynamicPartitionsDefinition(name=SITE_PARTITIONS)
# checks are partitioned like their assets (one site's failure leaves the others green): a preview API in
# Dagster 1.13 that warns on every definition
warnings.filterwarnings("ignore", "Specifying a partitions_def on an AssetCheckSpec", PreviewWarning)


def site_key(context: AssetExecutionContext) -> str:
    """The run's site, refusing a partition key that is not a normalised host."""
    key = context.partition_key
    site = normalize_host(key)
    if site != key:
        raise InputError(f"partition key '{key}' is not a normalised host; use '{site}'.")
    return site
