"""Named points where the reliability tests kill the process, to prove what a crash there leaves behind.

$INTERLINK_FAULT names one point (`after-insert:graph.link_plan`), optionally with the pass to kill at
(`embedding-chunk@3`: the third time the process reaches it). Unset, as in every real run, a point costs an
environment lookup. The points are: `after-insert:<table>` (rows inserted, not committed), `embedding-chunk`
(a chunk of texts about to be embedded), `candidate-proposals` (the kept text neighbours updated, no
candidate written) and `publish-file` (a staged file about to replace the published one)."""

from __future__ import annotations

import os
import signal
from collections import Counter

from interlink_pipeline.core.environment import environment

_passes: Counter[str] = Counter()


def fault_point(name: str) -> None:
    """SIGKILL this process here when $INTERLINK_FAULT names this point (at the pass it names)."""
    wanted = environment().fault
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _passes[name] += 1
    if _passes[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
