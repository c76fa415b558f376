"""Shared benchmark plumbing: each measurement runs in a fresh process (clean peak RSS), repeated; the
table reports medians."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / ".data"
RESULTS = ROOT / "benchmarks" / "results"
SAMPLE_DIR = ROOT / "data" / "sample"
# The real crawls beside the checkout (as in the tests); never copied into the repository.
SHARED_CRAWLS = Path(os.environ.get("INTERLINK_SHARED_CRAWLS", ROOT.parent / "shared" / "data" / "crawls"))

# Appended to every measured snippet: reports wall time of the measured part and the process's peak RSS.
_REPORT = """
import json as _json, resource as _resource
_peak = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss / 1024
print("@@RESULT@@" + _json.dumps({**RESULT, "peak_rss_mb": _peak}))
"""


# One asset materialised as a run does it (site_pipeline, in process), on a copy of a prepared warehouse.
# A snippet continues from here with `warehouse`, `result`, `seconds` and `failed_checks`.
_MATERIALIZE = """
import shutil, tempfile, time
from pathlib import Path
import dagster as dg
from interlink_pipeline.definitions import build_defs
from interlink_pipeline.defs.jobs import step_keys
folder = Path(tempfile.mkdtemp())
warehouse = folder / "bench.duckdb"
shutil.copyfile({warehouse!r}, warehouse)
defs = build_defs(str(warehouse), str(folder / "inbox"))
instance = dg.DagsterInstance.ephemeral()
instance.add_dynamic_partitions("sites", [{site!r}])
started = time.monotonic()
result = defs.resolve_job_def("site_pipeline").execute_in_process(
    partition_key={site!r}, instance=instance, asset_selection=step_keys(defs, [{asset!r}]),
    run_config={run_config!r},
)
seconds = time.monotonic() - started
failed_checks = [
    e.event_specific_data.check_name for e in result.all_events
    if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.event_specific_data.passed
]
"""


def materialize_snippet(warehouse: Path | str, site: str, asset: str, run_config: dict, then: str) -> str:
    """A snippet for `measure`: materialise `asset` for `site` on a copy of `warehouse`, then run `then`."""
    prelude = _MATERIALIZE.format(warehouse=str(warehouse), site=site, asset=asset, run_config=run_config)
    return prelude + then


@dataclass
class Measurement:
    label: str
    size: int
    runs: list[dict]

    def median(self, key: str) -> float:
        return statistics.median(run[key] for run in self.runs)

    def spread(self, key: str) -> str:
        values = [run[key] for run in self.runs]
        return f"{min(values):.1f}–{max(values):.1f}" if len(values) > 1 else "-"


def measure(label: str, size: int, snippet: str, repeats: int, timeout: int = 3600) -> Measurement:
    """Run `snippet` (which must set RESULT = {"seconds": …, …}) `repeats` times in fresh processes."""
    runs = []
    for _ in range(repeats):
        started = time.monotonic()
        # the snippet's temporary copies (warehouses of up to several GB) go when it ends
        with tempfile.TemporaryDirectory(prefix="interlink-bench-") as scratch:
            done = subprocess.run(
                [sys.executable, "-c", snippet + _REPORT],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={**os.environ, "TMPDIR": scratch},
            )
        if done.returncode != 0:
            raise RuntimeError(f"{label} failed:\n{done.stderr[-3000:]}")
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith("@@RESULT@@"))
        result = json.loads(line.removeprefix("@@RESULT@@"))
        result.setdefault("seconds", time.monotonic() - started)
        runs.append(result)
        print(f"  {label} @ {size:,}: {result['seconds']:.1f}s, {result['peak_rss_mb']:,.0f} MB", flush=True)
    return Measurement(label, size, runs)


def print_table(title: str, rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    text = "\n".join([f"\n{title}", line, sep, *body])
    print(text)
    return text


def save(name: str, payload: dict) -> Path:
    """Write the raw results; a run that measured only some parts keeps the earlier results of the others."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    merged = json.loads(path.read_text()) if path.exists() else {}
    for key, value in json.loads(json.dumps(payload, default=str)).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        elif value or key not in merged:
            merged[key] = value
    path.write_text(json.dumps(merged, indent=2))
    return path


def generated_site(pages: int, with_links: bool = False) -> Path:
    """A generated site under benchmarks/.data (made once, reused)."""
    folder = DATA / f"site-{pages}{'-links' if with_links else ''}"
    if not (folder / "internal_all.csv").exists():
        from interlink_pipeline.sample import generate_site, write_site

        print(f"generating a {pages:,}-page site in {folder} …", flush=True)
        write_site(generate_site(pages, with_links=with_links), folder)
    return folder
