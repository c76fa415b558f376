"""A site's runs in the Dagster instance, told from the freshness check's own: read by the CLI (its run
lock, `interlink status`) and the freshness sensor, without loading the definitions."""

from dagster import DagsterRunStatus, RunsFilter

# the tag of a check's own run: not a run of the site's pipeline (interlink status, the CLI's run lock)
FRESHNESS_TAG = {"interlink/trigger": "freshness"}


def site_runs(instance, site: str, statuses: list[DagsterRunStatus] | None = None, limit: int = 20) -> list:
    """The site's runs (records, newest first) in `statuses`, but the freshness check's own: a check, not
    a run of the site (`interlink status`' last run, the CLI's run lock, this sensor)."""
    records = instance.get_run_records(
        RunsFilter(tags={"dagster/partition": site}, statuses=statuses), limit=limit
    )
    return [r for r in records if not FRESHNESS_TAG.items() <= r.dagster_run.tags.items()]
