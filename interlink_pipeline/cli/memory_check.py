"""A whole run's memory, checked before it starts against INTERLINK_MEMORY_LIMIT and recorded on the run
once it succeeds (core/run_memory.py): the site's size is its registered crawl export's rows, counted the
same way both times, so the last run's peak scales to the site now."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

PEAK_TAG = "interlink/peak_memory_gb"  # a whole CLI run's peak resident memory, on the run
PAGES_TAG = "interlink/pages"  # ... and the rows of the crawl export it read


def crawl_rows(site: str) -> int:
    """Rows of the site's registered crawl export (0: none): newlines of a delimited file (a field that
    holds one counts it twice: an estimate's input), a workbook's rows."""
    from interlink_pipeline.core.ingest.inbox import default_inbox, latest_exports, site_folder

    crawl = latest_exports(site_folder(default_inbox(), site)).get("crawl")
    if crawl is None:
        return 0
    if crawl.suffix.lower() in (".xlsx", ".xlsm"):
        from openpyxl import load_workbook

        workbook = load_workbook(crawl, read_only=True)
        try:
            return max((workbook.worksheets[0].max_row or 1) - 1, 0)
        finally:
            workbook.close()
    return max(_newlines(crawl) - 1, 0)


def _newlines(path: Path) -> int:
    count = 0
    with open(path, "rb") as file:
        while block := file.read(1 << 24):
            count += block.count(b"\n")
    return count


def refuse_over_cap(instance, site: str, rows: int) -> None:
    """An InputError when a whole run of `site` (`rows`: its crawl's, crawl_rows) is estimated above
    INTERLINK_MEMORY_LIMIT (none unset)."""
    from interlink_pipeline.core.environment import environment
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.run_memory import memory_refusal

    cap = environment().memory_cap
    if cap is None:
        return
    refusal = memory_refusal(cap, rows, _last_whole_run(instance, site), site)
    if refusal is not None:
        raise InputError(refusal)


def _last_whole_run(instance, site: str):
    """The site's last whole CLI run that recorded its peak (core/run_memory.LastRun), or None."""
    from dagster import DagsterRunStatus, RunsFilter

    from interlink_pipeline.core.run_memory import LastRun

    done = RunsFilter(tags={"dagster/partition": site}, statuses=[DagsterRunStatus.SUCCESS])
    for run in instance.get_runs(done, limit=20):
        if PEAK_TAG in run.tags and PAGES_TAG in run.tags:
            return LastRun(run.run_id, int(run.tags[PAGES_TAG]), float(run.tags[PEAK_TAG]))
    return None


def record_peak(instance, run_id: str, rows: int) -> None:
    """Tag a whole run that succeeded with this process's peak resident memory and its crawl's `rows`."""
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak_gb = peak_kb * (1 if sys.platform == "darwin" else 1024) / 1e9
    instance.add_run_tags(run_id, {PEAK_TAG: f"{peak_gb:.2f}", PAGES_TAG: str(rows)})
