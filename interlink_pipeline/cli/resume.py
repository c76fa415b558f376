"""What a site's last run left undone, so `interlink materialize --resume` runs only that: a run killed
hours into a large site (the OOM killer, a reboot) keeps every step it finished. A step that finished
wrote its tables whole, and the steps after it read them from the warehouse; the vectors a killed
embedding step had computed are in its cache already. Resuming is refused where it would mix two
crawls: exports registered since the run (its finished steps read the older ones)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resumption:
    """The run resumed and what is left of it."""

    run_id: str
    done: list[str]  # its steps that succeeded, in the order they finished
    left: list[str]  # its steps that did not, in the job's order
    run_config: dict
    run_key: str | None  # the registered exports the run read (the inbox sensor's key), if it read them
    tags: dict[str, str]  # the new run's tags: which run it re-executes (Dagster's own re-execution tags)


def resumption(instance, site: str, inbox_key: str | None) -> Resumption:
    """What resuming the site's last run means, or an InputError saying why there is nothing to resume
    (no run, its last run succeeded or is still going) or why it may not be resumed (exports registered
    since). `inbox_key`: the run key of the exports registered now. Dead runs must be released first
    (dead_runs.release_dead_runs): a killed run is a failed one only once marked so."""
    from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.definitions import defs
    from interlink_pipeline.defs.ingest.inbox_sensor import RUN_KEY_TAG
    from interlink_pipeline.defs.jobs import step_names

    records = instance.get_run_records(RunsFilter(tags={"dagster/partition": site}), limit=1)
    if not records:
        raise InputError(f"{site} has no run to resume: run it with interlink materialize --site {site}")
    run = records[0].dagster_run
    if run.status == DagsterRunStatus.SUCCESS:
        raise InputError(f"{site}'s last run ({run.run_id}) succeeded: there is nothing to resume.")
    if run.status not in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED):
        raise InputError(
            f"{site}'s last run ({run.run_id}) is {run.status.value.lower()}: wait for it "
            f"(interlink materialize --site {site} --wait)."
        )
    read = run.tags.get(RUN_KEY_TAG)
    if read is not None and read != inbox_key:
        raise InputError(
            f"{site} has exports registered since run {run.run_id}, whose finished steps read the older "
            f"ones: run it in full (interlink materialize --site {site})."
        )
    planned = step_names(defs, run.asset_selection)
    done = [
        record.step_key
        for record in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_SUCCESS)
        if record.step_key in planned
    ]
    left = [step for step in planned if step not in done]
    if not left:
        raise InputError(
            f"every step of {site}'s last run ({run.run_id}) finished; it failed in a check: run it in full "
            f"(interlink materialize --site {site})."
        )
    config = {key: value for key, value in run.run_config.items() if key != "loggers"}
    root = run.tags.get("dagster/root_run_id", run.run_id)
    return Resumption(
        run.run_id,
        done,
        left,
        config,
        read,
        {"dagster/parent_run_id": run.run_id, "dagster/root_run_id": root},
    )
