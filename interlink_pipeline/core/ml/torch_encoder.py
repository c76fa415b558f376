"""The PyTorch encoder: sentence-transformers on any torch device, in half precision with large batches on
CUDA/MPS (and on the CPU where the ONNX backend cannot run a model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interlink_pipeline.core.environment import quiet_model_downloads
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.model_identity import ModelIdentity


def sentence_transformer(identity: ModelIdentity) -> Any:
    """The model as a SentenceTransformer, from its local files only, without progress bars."""
    quiet_model_downloads()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(identity.folder), device=identity.device, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"could not load the model in {identity.folder}: {exc}") from None


class TorchEncoder:
    """sentence-transformers on any torch device; half precision on GPUs."""

    backend = "torch"
    reference = None  # never quantised

    def __init__(self, st: Any, identity: ModelIdentity, batch_size: int):
        if identity.half:
            st.half()
        self._st = st
        self.model_id = identity.model_id
        self.device = identity.device
        self.batch_size = batch_size
        self.dim = int(st.get_embedding_dimension())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._st.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return unit_rows(np.asarray(vectors, dtype=np.float32))


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit norm, as float32: every encoder's output."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32, copy=False)
