import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.run_memory import LastRun, estimated_peak_gb, memory_refusal, parse_size


def test_a_runs_memory_is_estimated_from_the_sites_last_run_else_from_the_measured_sizes():
    # never run: the measured peaks, between them and along the last slope past the largest
    assert estimated_peak_gb(10_000, None) == pytest.approx(2.01)
    assert estimated_peak_gb(200_000, None) == pytest.approx((3.92 + 8.98) / 2)
    assert estimated_peak_gb(1_000_000, None) == pytest.approx(8.98 + 7 * (8.98 - 3.92) / 2)
    assert estimated_peak_gb(10, None) == 1.0  # never under the process's floor
    # run before: its peak above the floor grows with the pages
    assert estimated_peak_gb(4_000, LastRun("r", 2_000, 1.5)) == pytest.approx(2.0)
    assert estimated_peak_gb(2_000, LastRun("r", 2_000, 0.8)) == pytest.approx(0.8)  # the same site: its peak
    assert memory_refusal(None, 10**7, None, "a.example") is None  # no cap, no check
    assert memory_refusal("64GB", 1_000_000, None, "a.example") is None
    said = memory_refusal("16GB", 1_000_000, None, "a.example")
    assert said.startswith(
        "a run of a.example (1,000,000 URLs in its crawl) needs about 26.7 GB of memory (the pipeline's"
    )
    assert parse_size("512 MiB", "X") == 512 * 2**20 and parse_size("12gb", "X") == 12 * 10**9
    for wrong in ("lots", "0GB", "12 parsecs", "-1GB"):
        with pytest.raises(InputError, match="X must be a size such as 12GB or 512MiB"):
            parse_size(wrong, "X")
