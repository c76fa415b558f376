"""The int8 encoder's gate: it replaces fp32 only where it keeps the site's nearest neighbours.

Dynamic int8 moves each vector only a little (cosine about 0.99 to fp32's) but reorders close neighbours,
and neighbours are what every later step reads. Before anything is embedded, a sample of the texts is
embedded by both graphs, and the share of each text's 10 nearest (fp32) that int8 also ranks in its 10
nearest must reach 95%, else the step fails with the figure and nothing is written.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.encoders import TextEncoder

INT8_MIN_RECALL = 0.95
INT8_CHECK_TEXTS = 2_000
INT8_CHECK_NEIGHBOURS = 10


def neighbour_recall(reference: np.ndarray, candidate: np.ndarray, k: int) -> float:
    """Mean share of each row's k nearest rows (cosine of unit rows, itself excluded) under `reference`
    that are among its k nearest under `candidate`; a row tied with reference's k-th counts as kept."""
    rows = np.arange(len(reference))[:, None]
    exact = reference @ reference.T
    np.fill_diagonal(exact, -np.inf)
    approx = candidate @ candidate.T
    np.fill_diagonal(approx, -np.inf)
    kth = -np.partition(-exact, k - 1, axis=1)[:, k - 1 : k]
    chosen = np.argpartition(-approx, k - 1, axis=1)[:, :k]
    return float((exact[rows, chosen] >= kth).mean())


def check_int8(encoder: TextEncoder, texts: pl.DataFrame) -> float | None:
    """The int8 encoder's neighbour recall against its fp32 reference on a sample of `texts` (text_hash,
    text), raising when it is under INT8_MIN_RECALL; None for an encoder that is not quantised."""
    if encoder.reference is None or texts.height < 2:
        return None
    sample = texts.sort("text_hash").head(INT8_CHECK_TEXTS)["text"].to_list()  # hash order: a fixed draw
    k = min(INT8_CHECK_NEIGHBOURS, len(sample) - 1)
    recall = neighbour_recall(encoder.reference.encode(sample), encoder.encode(sample), k)
    if recall < INT8_MIN_RECALL:
        raise InputError(
            f"int8 keeps {recall:.1%} of the {k} nearest neighbours of {len(sample):,} of this site's texts "
            f"under fp32, under the {INT8_MIN_RECALL:.0%} it needs: set the embedder's int8 to false (fp32)."
        )
    return recall
