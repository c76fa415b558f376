"""The pages the plan leaves for an editor instead of linking them anyway: an orphan, a page deeper than
max_depth or one cut off from the home page that none of its related pages could link, each with its best
candidate sources and why each was passed over; and the near-duplicate orphans, named with the page they
repeat (merge, redirect or canonicalise). One sentence per page, in graph.page_metrics.left_for_editor,
its problem before the first colon."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.link_evidence import RELATED_EVIDENCE
from interlink_pipeline.core.graph.metrics import UNREACHABLE, click_depth
from interlink_pipeline.core.graph.plan_state import PlanState

PASSED_OVER = 3  # the best candidate sources a page left for an editor names
PROBLEMS = ("orphan", "unreachable", "too deep", "near-duplicate")


@dataclass(frozen=True)
class EditorTask:
    """A page left for an editor: its problem and its best candidate sources (page, probability, why it was
    passed over), best first; `twin` for a near-duplicate (the page it repeats)."""

    problem: str
    passed_over: tuple[tuple[int, float, str], ...] = ()
    twin: int = -1

    def sentence(self, urls: list[str]) -> str:
        if self.problem == "near-duplicate":
            return f"near-duplicate: says what {urls[self.twin]} says; merge, redirect or canonicalise one"
        if not self.passed_over:
            return f"{self.problem}: no page of this site is about the same thing (no candidate source)"
        named = "; ".join(f"{urls[page]} ({score:.0%}: {why})" for page, score, why in self.passed_over)
        return f"{self.problem}: no related page could link it; passed over: {named}"


def editor_tasks(planner: PlanState) -> dict[int, EditorTask]:
    """The pages the plan left for an editor (see the module's docstring), by page index."""
    n, options = planner.page_count, planner.options
    depth = click_depth(planner.current_graph(), planner.site.home)[:n]
    orphan = planner.inbound[:n] == 0
    unreachable = depth == UNREACHABLE
    too_deep = depth > options.max_depth
    left = (orphan | unreachable | too_deep) & ~planner.left_alone
    left[planner.site.home] = False
    tasks = {
        int(page): EditorTask("near-duplicate", twin=int(planner.duplicate_of[page]))
        for page in np.flatnonzero(planner.duplicate_of >= 0)
    }
    pages = np.flatnonzero(left)
    if not len(pages):
        return tasks
    best = (
        planner.site.candidates.filter(pl.col("target").is_in(pl.Series(pages, dtype=pl.Int64).implode()))
        .sort(["target", "score", "source"], descending=[False, True, False])
        .group_by("target", maintain_order=True)
        .head(PASSED_OVER)
        .group_by("target", maintain_order=True)
        .agg("source", "score", "provenance")
    )
    sources = {t: list(zip(s, p, o, strict=True)) for t, s, p, o in best.iter_rows()}
    for page in pages.tolist():
        problem = "orphan" if orphan[page] else "unreachable" if unreachable[page] else "too deep"
        out_of_reach = {
            "orphan": None,
            "unreachable": (unreachable, "itself cut off from the home page"),
            "too deep": (
                ~((depth >= 0) & (depth < options.max_depth)),
                f"itself {options.max_depth} or more clicks deep",
            ),
        }[problem]
        tasks[page] = EditorTask(
            problem,
            tuple(
                (
                    int(source),
                    float(score),
                    _why_passed_over(planner, source, page, score, origins, out_of_reach),
                )
                for source, score, origins in sources.get(page, [])
            ),
        )
    return tasks


def _why_passed_over(
    planner: PlanState,
    source: int,
    target: int,
    score: float,
    origins: str,
    out_of_reach: tuple[np.ndarray, str] | None,
) -> str:
    """Why a candidate source did not give a page left for an editor its link (`out_of_reach`: the pages
    that could not give it, and why, for a page too deep or cut off)."""
    floor = planner.options.min_probability
    if planner.utility[source]:
        return "a utility page"
    if (source, target) in planner.site.rejected:
        return "rejected by an editor"
    if not re.search(RELATED_EVIDENCE, origins or ""):
        return "linked alike on the site, but nothing says the pages are about the same thing"
    if score < floor:
        return f"under the plan's floor of {floor:.0%}"
    if source not in planner.neighbours[target][0]:
        return f"not among its {planner.options.structural_sources} most related pages"
    if out_of_reach is not None and out_of_reach[0][source]:
        return out_of_reach[1]
    if source == planner.site.home and planner.out_budget[source] <= 0:
        return "the home page, full: past its hub links it lists only its own sections' indexes"
    if planner.out_budget[source] <= 0 and not planner.is_index[source]:
        return "no room for another link"
    return "its room came free only after the structure steps"


def task_counts(tasks: dict[int, EditorTask]) -> dict[str, int]:
    """Pages left for an editor, by problem."""
    counts = dict.fromkeys(PROBLEMS, 0)
    for task in tasks.values():
        counts[task.problem] += 1
    return counts
