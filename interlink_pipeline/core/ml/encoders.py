"""Text encoders: what to embed with, and the encoder for it, one normalised output whatever the backend.

On CPU the default backend is ONNX Runtime (`onnx_encoder`), on CUDA/MPS PyTorch (`torch_encoder`); the
model is found offline and named by its files (`model_identity`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.model_identity import (
    DEFAULT_MODEL,
    ModelIdentity,
    model_fingerprint,
    resolve_device,
    resolve_model_dir,
)
from interlink_pipeline.core.ml.onnx_encoder import OnnxEncoder, OnnxUnsupported
from interlink_pipeline.core.ml.torch_encoder import TorchEncoder, sentence_transformer
from interlink_pipeline.core.settings import setting

log = logging.getLogger(__name__)

Backend = Literal["auto", "onnx", "torch"]
Int8 = Literal["auto", "always", "never"]


@dataclass(frozen=True)
class EncoderSettings:
    """What to embed with (the `embedder` resource is derived from these settings)."""

    model: str = setting(
        DEFAULT_MODEL,
        "all-MiniLM-L6-v2 (bundled, offline), any sentence-transformers model name in the local Hugging "
        "Face cache, or a model folder. Default from $INTERLINK_EMBEDDING_MODEL.",
    )
    device: str = setting("auto", "auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps.")
    backend: Backend = setting(
        "auto", "auto: ONNX Runtime on CPU (1.6-1.8x faster, same vectors), PyTorch on GPUs."
    )
    batch_size: int | None = setting(None, "Texts per batch (default: 16 onnx, 32 cpu, 256 gpu).")
    half_precision: bool = setting(True, "fp16 on GPUs (vectors cached separately from fp32).")
    int8: Int8 = setting(
        "auto",
        "int8 weights on the CPU (ONNX Runtime dynamic quantisation; vectors cached separately), 2.3-2.7x "
        "faster, where on a sample of the site's own texts it keeps 98% of each text's 10 nearest under "
        "fp32 within its 20 nearest. auto: for a site first embedded with over 50,000 distinct texts "
        "(else fp32; a site keeps the precision it has), fp32 where the check fails; always: the step "
        "fails where it does; never: fp32.",
    )
    allow_download: bool = setting(
        False, "Let a model missing locally be downloaded from the Hugging Face Hub."
    )


class TextEncoder(Protocol):
    model_id: str
    dim: int
    device: str
    backend: str
    reference: TextEncoder | None  # the fp32 encoder a quantised one is checked against (int8_check)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, one row per text, in order."""
        ...


def int8_runs_here(settings: EncoderSettings) -> bool:
    """int8 runs on the CPU with the ONNX backend."""
    return resolve_device(settings.device) == "cpu" and settings.backend != "torch"


@functools.lru_cache(maxsize=16)
def identify_model(settings: EncoderSettings) -> ModelIdentity:
    """The model's identity (and cache key) without loading it; int8 only where it is `always` (a site's
    `auto` is decided first: int8_check.site_settings)."""
    device = resolve_device(settings.device)
    int8 = settings.int8 == "always"
    if int8 and not int8_runs_here(settings):
        raise InputError(
            f"int8 runs on the CPU with the ONNX backend (device is '{device}', backend "
            f"'{settings.backend}'): set int8 to auto or never, or device cpu and backend auto."
        )
    folder, label = resolve_model_dir(settings.model, settings.allow_download)
    half = settings.half_precision and device != "cpu"
    return ModelIdentity(folder, label, model_fingerprint(folder), device, half, int8)


@functools.lru_cache(maxsize=4)
def load_encoder(settings: EncoderSettings) -> TextEncoder:
    """The encoder for `settings`, loaded once per process."""
    identity = identify_model(settings)
    backend = settings.backend
    if backend == "auto":
        backend = "onnx" if identity.device == "cpu" else "torch"
    if backend == "onnx":
        if identity.device != "cpu":
            raise InputError(
                f"backend 'onnx' runs on the CPU; device is '{identity.device}'. Use auto or torch."
            )
        try:
            return OnnxEncoder.load(identity, settings.batch_size or 16)
        except OnnxUnsupported as exc:
            if identity.int8:
                raise InputError(
                    f"int8 needs the ONNX backend, which cannot run {identity.label}: {exc}. "
                    "Set int8 to never."
                ) from None
            if settings.backend == "onnx":
                raise InputError(
                    f"backend 'onnx' cannot run {identity.label}: {exc}. Use auto or torch."
                ) from None
            log.warning(
                "%s: the ONNX backend cannot run it (%s); using PyTorch on the CPU", identity.label, exc
            )
    default_batch = 32 if identity.device == "cpu" else 256
    return TorchEncoder(sentence_transformer(identity), identity, settings.batch_size or default_batch)


@dataclass(frozen=True)
class SiteEncoder:
    """The encoder a site's vectors are made with (its int8 decided): what every step embeds it with."""

    settings: EncoderSettings

    def identity(self) -> ModelIdentity:
        return identify_model(self.settings)

    def encoder(self) -> TextEncoder:
        """Loaded on first use, once per process."""
        return load_encoder(self.settings)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder().encode(texts)
