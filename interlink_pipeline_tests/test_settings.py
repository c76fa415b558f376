"""One declaration per setting: every Dagster config field is derived from a core setting (same name, default,
meaning and bounds), or is listed here with what it is instead."""

import dataclasses

import pytest

from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.ingest.cleaning_options import CleaningOptions
from interlink_pipeline.core.ml.clusters import ClusterOptions
from interlink_pipeline.core.ml.encoders import EncoderSettings
from interlink_pipeline.core.ml.model_identity import resolve_device
from interlink_pipeline.core.ml.similarity import SimilarityOptions
from interlink_pipeline.core.relevance.link_ranker import RankerOptions
from interlink_pipeline.core.relevance.site_signals import CandidateOptions
from interlink_pipeline.core.serp.options import SerpOptions
from interlink_pipeline.core.warehouse.lake_maintenance import MaintenanceOptions
from interlink_pipeline.defs.graph.link_plan import LinkPlanConfig
from interlink_pipeline.defs.ingest.crawl import PagesConfig
from interlink_pipeline.defs.ml.embeddings import Embedder
from interlink_pipeline.defs.ml.similarity import ClustersConfig, SimilarityConfig
from interlink_pipeline.defs.relevance.ranker import CandidateSettings, LinkRankerConfig
from interlink_pipeline.defs.serp.results import SerpApi, SerpResultsConfig
from interlink_pipeline.defs.settings import options_from
from interlink_pipeline.defs.warehouse.maintenance import LakeMaintenanceConfig

# (config, core settings, what the shell resolves itself, core fields that are not user settings, config
# fields that steer the step rather than the core's computation)
PAIRS = [
    (PagesConfig, CleaningOptions, {}, set(), set()),
    (Embedder, EncoderSettings, {}, set(), set()),
    (CandidateSettings, CandidateOptions, {}, set(), set()),
    (LinkRankerConfig, RankerOptions, {}, set(), {"retrain", "refit_above"}),
    (LinkPlanConfig, PlanOptions, {}, set(), set()),
    (LakeMaintenanceConfig, MaintenanceOptions, {}, set(), set()),
    (
        SerpResultsConfig,
        SerpOptions,
        {"endpoint": SerpApi().endpoint},  # the API's address is the resource's
        set(),
        {"queries_file", "queries_column_map"},  # what the queries are read from
    ),
    (SimilarityConfig, SimilarityOptions, {"device": resolve_device("auto")}, set(), set()),
    (
        ClustersConfig,
        ClusterOptions,
        {},
        # how k is searched and sampled: fixed by the benchmarks, not a user's choice
        {"candidates", "selection_sample", "silhouette_sample", "minibatch_above", "seed"},
        set(),
    ),
]


@pytest.mark.parametrize(
    ("config", "core", "resolved", "fixed", "steering"), PAIRS, ids=[pair[0].__name__ for pair in PAIRS]
)
def test_config_and_core_settings_agree(config, core, resolved, fixed, steering):
    core_fields = {f.name for f in dataclasses.fields(core)}
    config_fields = set(config.model_fields)
    lacking = core_fields - config_fields
    assert lacking == (set(resolved) - config_fields) | fixed, f"{core.__name__} fields the config lacks"
    assert config_fields - core_fields == steering, f"{config.__name__} fields the core does not take"
    # the config's defaults are the core's defaults
    assert options_from(config(), core, **resolved) == core(**resolved)


def test_a_config_zero_or_empty_means_the_core_none():
    options = options_from(ClustersConfig(k=0, language="", extra_stop_words=["x"]), ClusterOptions)
    assert options.k is None and options.language is None and options.extra_stop_words == ("x",)
    assert options_from(SimilarityConfig(max_per_target=0), SimilarityOptions).max_per_target is None
    # where the config itself takes None, "" is a value: keep titles whole
    assert options_from(PagesConfig(branding_pattern=""), CleaningOptions).branding_pattern == ""


def test_a_derived_config_carries_the_core_settings_meaning_and_bounds():
    field = LinkPlanConfig.model_fields["out_link_budget"]
    assert field.default == PlanOptions().out_link_budget and "links per page" in field.description
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        LinkPlanConfig(out_link_budget=0)
    # a setting the core takes as None is spelt 0 in the config, and a list is a list
    assert ClustersConfig.model_fields["k"].default == 0
    assert ClustersConfig(extra_stop_words=["a"]).extra_stop_words == ["a"]
