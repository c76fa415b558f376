"""int8 or fp32 for a site's vectors, and the gate int8 passes every run it embeds.

Dynamic int8 moves each vector only a little (cosine about 0.98 to fp32's) and reorders close neighbours.
What the later steps read of those neighbours is each page's nearest pages per text field (CANDIDATE_DEPTH
of them), which the ranker orders again. So int8 is treated as the site's other approximate searches are:
before anything is embedded, a sample of the texts is embedded by both graphs, and the share of each text's
10 nearest under fp32 that int8 ranks within its CANDIDATE_DEPTH nearest must reach their recall floor.
Short of it, a site left to `auto` is embedded in fp32 and the run says so; one set to `always` fails.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.ann_search import APPROXIMATE_ABOVE, RECALL_FLOOR
from interlink_pipeline.core.ml.encoders import EncoderSettings, TextEncoder, int8_runs_here
from interlink_pipeline.core.ml.model_identity import ModelIdentity
from interlink_pipeline.core.warehouse.database import query

INT8_MIN_RECALL = RECALL_FLOOR
INT8_CHECK_TEXTS = 2_000
INT8_CHECK_NEIGHBOURS = 10
CANDIDATE_DEPTH = 20  # nearest pages per text field the candidates take (site_signals' neighbours_per_field)


@dataclass(frozen=True)
class Int8Check:
    """What the gate measured: the share of `texts` texts' `k` nearest under fp32 that int8 keeps."""

    recall: float
    texts: int
    k: int

    @property
    def passed(self) -> bool:
        return self.recall >= INT8_MIN_RECALL

    def measured(self) -> str:
        said = (
            f"int8 keeps {self.recall:.1%} of the {self.k} nearest neighbours of {self.texts:,} of this "
            f"site's texts under fp32 within its {CANDIDATE_DEPTH} nearest"
        )
        return said if self.passed else f"{said}, under the {INT8_MIN_RECALL:.0%} it needs"

    def said(self) -> str:
        """The precision used, and why."""
        return f"{'int8' if self.passed else 'fp32'}: {self.measured()}"


def neighbour_recall(reference: np.ndarray, candidate: np.ndarray, k: int, depth: int) -> float:
    """Mean share of each row's k nearest rows (cosine of unit rows, itself excluded) under `reference`
    that are among its `depth` nearest under `candidate`; a row tied with reference's k-th counts as kept."""
    rows = np.arange(len(reference))[:, None]
    exact = reference @ reference.T
    np.fill_diagonal(exact, -np.inf)
    approx = candidate @ candidate.T
    np.fill_diagonal(approx, -np.inf)
    kth = -np.partition(-exact, k - 1, axis=1)[:, k - 1 : k]
    chosen = np.argpartition(-approx, depth - 1, axis=1)[:, :depth]
    return float(np.minimum((exact[rows, chosen] >= kth).sum(axis=1), k).mean() / k)


def check_int8(encoder: TextEncoder, texts: pl.DataFrame) -> Int8Check | None:
    """The int8 encoder's neighbour recall against its fp32 reference on a sample of `texts` (text_hash,
    text); None for an encoder that is not quantised, or too few texts to have neighbours."""
    if encoder.reference is None or texts.height < 2:
        return None
    sample = texts.sort("text_hash").head(INT8_CHECK_TEXTS)["text"].to_list()  # hash order: a fixed draw
    k = min(INT8_CHECK_NEIGHBOURS, len(sample) - 1)
    depth = min(CANDIDATE_DEPTH, len(sample) - 1)
    recall = neighbour_recall(encoder.reference.encode(sample), encoder.encode(sample), k, depth)
    return Int8Check(recall, len(sample), k)


def refuse(check: Int8Check) -> InputError:
    """The failure of a run set to int8 `always` whose site int8 does not serve."""
    return InputError(f"{check.measured()}: set the embedder's int8 to auto or never (fp32).")


def site_settings(warehouse: str | Path, site: str, settings: EncoderSettings) -> EncoderSettings:
    """`settings` with int8 decided for `site` (always or never). `auto` keeps the precision of the vectors
    the site has, so a site is never embedded again for having grown; a site with none takes int8 past
    APPROXIMATE_ABOVE distinct page texts (where its searches turn approximate too), where int8 runs."""
    if settings.int8 != "auto":
        return settings
    made = query(warehouse, "SELECT DISTINCT model FROM ml.page_embeddings WHERE site = ?", [site])[
        "model"
    ].to_list()
    if made:
        int8 = all(ModelIdentity.precision(model_id) == "int8" for model_id in made)
    else:
        texts = query(
            warehouse, "SELECT count(DISTINCT text_hash) AS texts FROM staging.pages WHERE site = ?", [site]
        )["texts"][0]
        int8 = texts > APPROXIMATE_ABOVE
    return replace(settings, int8="always" if int8 and int8_runs_here(settings) else "never")
