"""How much memory a whole run of a site needs, said before it starts when the user caps it
(INTERLINK_MEMORY_LIMIT): a run the kernel kills hours into a large site costs more than a sentence at its
start. The estimate is the site's own last whole run's peak with the part above the process's fixed floor
scaled to its pages now; for a site never run, the peaks the pipeline reached on the generated site
(docs/benchmarks.md, `bench_incremental`), interpolated between sizes and extended along their last slope
past the largest."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from interlink_pipeline.core.errors import InputError

# (pages, peak GB) of whole cold runs of the generated site, 2 cores (docs/benchmarks.md)
MEASURED_PEAKS_GB = ((1_000, 1.05), (10_000, 2.01), (100_000, 3.92), (300_000, 8.98))
FLOOR_GB = 1.0  # what a run holds whatever the site: Python, Dagster, the model (1,000 pages: 1.05 GB)
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B?)\s*$", re.I)


@dataclass(frozen=True)
class LastRun:
    """A site's last whole run as the memory estimate reads it."""

    run_id: str
    pages: int
    peak_gb: float


def parse_size(text: str, name: str) -> int:
    """Bytes of a size a user writes ("12GB", "512 MiB", "8gb"); an InputError naming the setting `name`
    otherwise."""
    found = _SIZE.match(text)
    if not found or float(found.group(1)) <= 0:
        raise InputError(f"{name} must be a size such as 12GB or 512MiB, not {text!r}.")
    return int(float(found.group(1)) * _UNITS[found.group(2).upper()])


def estimated_peak_gb(pages: int, last: LastRun | None) -> float:
    """A whole run's peak for a site of `pages` pages (see the module's docstring)."""
    if last is not None and last.pages > 0:
        floor = min(FLOOR_GB, last.peak_gb)  # a run that peaked under the floor held no more than it
        return floor + (last.peak_gb - floor) * pages / last.pages
    sizes = [size for size, _ in MEASURED_PEAKS_GB]
    at = min(max(bisect_left(sizes, pages), 1), len(sizes) - 1)
    (low, low_gb), (high, high_gb) = MEASURED_PEAKS_GB[at - 1], MEASURED_PEAKS_GB[at]
    return max(FLOOR_GB, low_gb + (high_gb - low_gb) * (pages - low) / (high - low))


def memory_refusal(cap: str | None, pages: int, last: LastRun | None, site: str) -> str | None:
    """The sentence that stops a whole run of `site` (`pages`: the URLs of its crawl) before it starts when
    its estimated peak is over the user's `cap` (INTERLINK_MEMORY_LIMIT; None: no cap), else None."""
    if cap is None:
        return None
    limit_gb = parse_size(cap, "INTERLINK_MEMORY_LIMIT") / 1e9
    need = estimated_peak_gb(pages, last)
    if need <= limit_gb:
        return None
    basis = (
        f"its last whole run ({last.run_id}) peaked at {last.peak_gb:.1f} GB with {last.pages:,} URLs"
        if last is not None
        else "the pipeline's measured peaks on a generated site of that size"
    )
    return (
        f"a run of {site} ({pages:,} URLs in its crawl) needs about {need:.1f} GB of memory ({basis}), "
        f"more than INTERLINK_MEMORY_LIMIT={cap}: raise the limit on a machine that has it, or run the site "
        "on a larger one; nothing was run."
    )
