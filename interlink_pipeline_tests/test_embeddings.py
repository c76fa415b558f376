"""Embeddings: the bundled offline model, backends, the cache, and the page_embeddings asset."""

import logging
import os
import re
import shutil
import subprocess
import sys
import time

import duckdb
import numpy as np
import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.ml import int8_check
from interlink_pipeline.core.ml.encoders import EncoderSettings, SiteEncoder, load_encoder
from interlink_pipeline.core.ml.model_identity import DEFAULT_MODEL, model_fingerprint, resolve_model_dir
from interlink_pipeline.core.ml.page_embeddings import embed_site
from interlink_pipeline.core.urls import stable_ids
from interlink_pipeline.core.warehouse.contract import ContractError
from interlink_pipeline.core.warehouse.store import replace_site_rows
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    LIGHT,
    NUTRI,
    SAMPLE_DIR,
    failure_message,
    materialization_metadata,
    run_site,
)

TEXTS = [
    "Waterproof hiking boots for winter",
    "How to choose a backpacking tent",
    "Kontakt",
    "Proteínas veganas",
]


def _pages_in_warehouse(path, export, site):
    raw = read_crawl_export(export, site).frame
    cleaned = clean_pages(raw, site)
    replace_site_rows(
        path, site, {"staging.pages": cleaned.pages, "staging.excluded_pages": cleaned.excluded}
    )
    return cleaned.pages


def _stored(path, site):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(
            "SELECT page_id, model, dim, vector FROM ml.page_embeddings WHERE site = ? ORDER BY page_id",
            [site],
        ).pl()


def test_default_model_is_bundled_and_offline(encoder):
    folder, label = resolve_model_dir(DEFAULT_MODEL)
    assert "site-packages" in str(folder) and label == DEFAULT_MODEL
    assert encoder.model_id == f"{DEFAULT_MODEL}@{model_fingerprint(folder)}"
    assert (encoder.dim, encoder.device, encoder.backend) == (384, "cpu", "onnx")


def test_vectors_are_unit_norm_stable_and_backend_independent(encoder):
    first = encoder.encode(TEXTS)
    assert first.dtype == np.float32 and first.shape == (4, 384)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, encoder.encode(TEXTS))  # deterministic
    assert np.allclose(encoder.encode(list(reversed(TEXTS)))[::-1], first, atol=1e-6)  # order-independent
    torch_encoder = load_encoder(EncoderSettings(backend="torch"))
    assert torch_encoder.model_id == encoder.model_id  # same model, same cache key
    assert (torch_encoder.encode(TEXTS) * first).sum(axis=1).min() > 0.9999
    assert encoder.encode([]).shape == (0, 384)


def test_a_verified_export_loads_without_pytorch(encoder, model_cache):
    assert list(model_cache.glob("onnx/*/verified.json"))  # written by the session's first load
    script = (
        "import sys\n"
        "from interlink_pipeline.core.ml.encoders import EncoderSettings, SiteEncoder, load_encoder\n"
        "e = load_encoder(EncoderSettings())\n"
        "print(e.backend, e.encode(['a tent']).shape, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "INTERLINK_MODEL_CACHE": str(model_cache)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["onnx", "(1,", "384)", "False"]


def test_same_files_in_another_folder_share_the_model_id(encoder, tmp_path):
    folder, _ = resolve_model_dir(DEFAULT_MODEL)
    copy = tmp_path / "my-minilm"
    shutil.copytree(folder, copy)
    local = load_encoder(EncoderSettings(model=str(copy), backend="torch"))
    assert local.model_id == encoder.model_id.replace(DEFAULT_MODEL, "my-minilm")
    assert np.allclose(local.encode(TEXTS), encoder.encode(TEXTS), atol=1e-4)


def test_a_model_name_is_found_in_the_local_hugging_face_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    folder, _ = resolve_model_dir(DEFAULT_MODEL)
    hub = tmp_path / "hub"
    snapshot = hub / "models--sentence-transformers--paraphrase-tiny" / "snapshots" / "0123abcd"
    shutil.copytree(folder, snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abcd")
    # the cache $HF_HUB_CACHE names (huggingface_hub reads the variable once, at import)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    encoder = load_encoder(EncoderSettings(model="paraphrase-tiny", backend="torch"))
    assert encoder.model_id.startswith("paraphrase-tiny@") and encoder.encode(["a tent"]).shape == (1, 384)


def test_a_missing_model_fails_at_once_with_instructions():
    started = time.monotonic()
    with pytest.raises(InputError) as error:
        load_encoder(EncoderSettings(model="paraphrase-multilingual-MiniLM-L12-v2"))
    message = str(error.value)
    assert "'paraphrase-multilingual-MiniLM-L12-v2' is not available offline" in message
    assert "SentenceTransformer('sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2')" in message
    assert "allow_download: true" in message and "is bundled and needs nothing" in message
    assert time.monotonic() - started < 30  # no network attempt, no hang


def test_bad_model_settings(tmp_path):
    (tmp_path / "notes").mkdir()
    with pytest.raises(InputError, match="is a folder but not a sentence-transformers model"):
        load_encoder(EncoderSettings(model=str(tmp_path / "notes")))
    with pytest.raises(InputError, match="device 'cuda' was requested but no CUDA GPU is available"):
        load_encoder(EncoderSettings(device="cuda"))
    with pytest.raises(InputError, match="unknown device 'tpu'"):
        load_encoder(EncoderSettings(device="tpu"))
    with pytest.raises(
        InputError, match=r"int8 runs on the CPU with the ONNX backend \(device is 'cpu', backend"
    ):
        load_encoder(EncoderSettings(int8="always", backend="torch"))


def test_neighbour_recall_counts_what_int8_keeps_and_ties_as_kept():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(200, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert int8_check.neighbour_recall(vectors, vectors, 10, 10) == 1.0
    assert int8_check.neighbour_recall(vectors, vectors[rng.permutation(200)], 10, 10) < 0.2  # unrelated
    # each text three times: its nearest is either copy (a tie), and int8 picking the other one loses nothing
    tied = np.repeat(vectors[:20], 3, axis=0)
    assert int8_check.neighbour_recall(tied, tied + rng.normal(scale=1e-4, size=tied.shape), 1, 1) == 1.0
    # what int8 moves just past the 10th is kept within the 20 the candidates take
    shaken = vectors + rng.normal(scale=0.05, size=vectors.shape).astype(np.float32)
    shaken /= np.linalg.norm(shaken, axis=1, keepdims=True)
    within_10 = int8_check.neighbour_recall(vectors, shaken, 10, 10)
    assert within_10 < int8_check.neighbour_recall(vectors, shaken, 10, 20) <= 1.0


def test_int8_is_used_only_where_it_keeps_the_sites_neighbours(encoder, warehouse_path, crawls, monkeypatch):
    """int8 keeps every lightchiropractic title's 10 nearest under fp32 within its 20 (measured): its
    vectors are int8's, cached apart from fp32's. Where the check fails (planted: a floor over 100%), a
    run set to `always` fails, says so and writes nothing; one left to `auto` embeds in fp32 and says so."""
    pages = _pages_in_warehouse(warehouse_path, crawls / "lightchiropractic/internal_all.csv", LIGHT)
    int8 = load_encoder(EncoderSettings(int8="always"))
    assert int8.model_id == f"{encoder.model_id}/int8" and int8.reference.model_id == encoder.model_id

    monkeypatch.setattr(int8_check, "INT8_MIN_RECALL", 1.01)
    with pytest.raises(InputError) as error:
        embed_site(warehouse_path, LIGHT, int8.model_id, lambda: int8)
    kept = re.fullmatch(
        r"int8 keeps (\d+\.\d)% of the 10 nearest neighbours of 97 of this site's texts under fp32 within "
        r"its 20 nearest, under the 101% it needs: set the embedder's int8 to auto or never \(fp32\)\.",
        str(error.value),
    )
    assert kept and float(kept[1]) > 98, error.value
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ml.embedding_cache").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM ml.page_embeddings").fetchone()[0] == 0

    fell_back = embed_site(warehouse_path, LIGHT, int8.model_id, lambda: int8, int8_falls_back=True)
    assert fell_back.model_id == encoder.model_id and not fell_back.int8.passed
    assert fell_back.int8.recall == pytest.approx(float(kept[1]) / 100, abs=5e-4)
    assert set(_stored(warehouse_path, LIGHT)["model"]) == {encoder.model_id}

    monkeypatch.undo()
    run = embed_site(warehouse_path, LIGHT, int8.model_id, lambda: int8)
    assert run.int8.passed and run.embedded == 97 and run.model_id == int8.model_id
    stored = _stored(warehouse_path, LIGHT).join(pages.select("page_id", "text"), on="page_id")
    assert set(stored["model"]) == {int8.model_id}
    vectors = np.array(stored["vector"].to_list(), dtype=np.float32)
    cosine = (vectors * encoder.encode(stored["text"].to_list())).sum(axis=1)
    assert cosine.min() > 0.95 and cosine.max() < 0.99999  # close to fp32, and not fp32


def test_auto_takes_int8_for_a_large_site_first_embedded_and_keeps_a_sites_precision(
    warehouse_path, crawls, monkeypatch
):
    """`auto` decides once per site: int8 past APPROXIMATE_ABOVE distinct texts (lowered to stand for a
    large site), fp32 below; a site keeps the precision its vectors have whatever it grows to, and every
    step after page_embeddings reads that decision off the warehouse."""
    from dataclasses import replace

    settings = EncoderSettings()
    _pages_in_warehouse(warehouse_path, crawls / "lightchiropractic/internal_all.csv", LIGHT)
    assert int8_check.site_settings(warehouse_path, LIGHT, settings).int8 == "never"  # 97 texts: small
    assert int8_check.site_settings(warehouse_path, LIGHT, replace(settings, int8="always")).int8 == "always"
    monkeypatch.setattr(int8_check, "APPROXIMATE_ABOVE", 50)
    decided = int8_check.site_settings(warehouse_path, LIGHT, settings)
    assert decided.int8 == "always"
    assert int8_check.site_settings(
        warehouse_path, LIGHT, replace(settings, device="cpu", backend="torch")
    ).int8 == (
        "never"  # int8 runs only on the ONNX backend
    )
    encoder = SiteEncoder(decided)
    embed_site(warehouse_path, LIGHT, encoder.identity().model_id, encoder.encoder, int8_falls_back=True)
    monkeypatch.setattr(int8_check, "APPROXIMATE_ABOVE", 50_000)
    assert int8_check.site_settings(warehouse_path, LIGHT, settings).int8 == "always"  # kept: int8 vectors
    assert int8_check.site_settings(warehouse_path, NUTRI, settings).int8 == "never"  # no pages, no vectors


def test_cache_hits_misses_and_exactly_the_changed_texts(encoder, warehouse_path):
    pages = _pages_in_warehouse(warehouse_path, SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST)
    cold = embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, lambda: encoder, chunk_size=500)
    assert (cold.pages, cold.cache_hits, cold.embedded) == (1700, 0, cold.distinct_texts)
    assert cold.chunks == -(-cold.distinct_texts // 500)
    stored = _stored(warehouse_path, SAMPLE_HOST)
    assert (
        stored.height == 1700 and set(stored["model"]) == {encoder.model_id} and set(stored["dim"]) == {384}
    )

    warm = embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, lambda: encoder)
    assert (warm.embedded, warm.cache_hits) == (0, cold.distinct_texts)
    assert warm.encoder is None  # everything cached: the model was never loaded
    assert warm.report.rows == 0 and warm.report.stored_rows == 1700  # and no stored vector was rewritten
    assert _stored(warehouse_path, SAMPLE_HOST).equals(stored)  # stable across runs

    changed = pages.head(17).with_columns((pl.col("text") + " (new edition)").alias("text"))
    changed = changed.with_columns(stable_ids(changed["text"], 32).alias("text_hash"))
    edited = pl.concat([changed, pages.slice(17)])
    replace_site_rows(warehouse_path, SAMPLE_HOST, {"staging.pages": edited})
    incremental = embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, lambda: encoder)
    assert incremental.embedded == changed["text_hash"].n_unique() == 17
    after = _stored(warehouse_path, SAMPLE_HOST)
    moved = after.join(stored, on="page_id", suffix="_before").filter(
        pl.col("vector") != pl.col("vector_before")
    )
    assert sorted(moved["page_id"]) == sorted(changed["page_id"])
    assert incremental.report.rows == 17  # only the changed pages' rows were rewritten

    remaining = pl.concat([edited.filter(pl.col("is_home")), edited.filter(~pl.col("is_home")).slice(100)])
    replace_site_rows(warehouse_path, SAMPLE_HOST, {"staging.pages": remaining})
    shrunk = embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, lambda: encoder)
    assert (shrunk.embedded, shrunk.report.rows, shrunk.report.stored_rows) == (0, 0, 1600)
    assert set(_stored(warehouse_path, SAMPLE_HOST)["page_id"]) == set(remaining["page_id"])


def test_a_run_that_dies_midway_resumes_from_the_cache(encoder, warehouse_path):
    _pages_in_warehouse(warehouse_path, SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST)

    class DiesOnThirdChunk:
        model_id, dim, device, backend, reference = encoder.model_id, encoder.dim, "cpu", "test", None
        calls = 0

        def encode(self, texts):
            self.calls += 1
            if self.calls == 3:
                raise MemoryError("killed")
            return encoder.encode(texts)

    with pytest.raises(MemoryError):
        embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, DiesOnThirdChunk, chunk_size=400)
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ml.embedding_cache").fetchone()[0] == 800
        assert con.execute("SELECT count(*) FROM ml.page_embeddings").fetchone()[0] == 0
    resumed = embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, lambda: encoder, chunk_size=400)
    assert resumed.cache_hits == 800 and resumed.embedded == resumed.distinct_texts - 800


def test_bad_vectors_are_never_stored(encoder, warehouse_path):
    _pages_in_warehouse(warehouse_path, SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST)
    embed_site(warehouse_path, SAMPLE_HOST, encoder.model_id, lambda: encoder)
    before = _stored(warehouse_path, SAMPLE_HOST)

    class Unnormalised:
        model_id, dim, device, backend, reference = "broken@0", 384, "cpu", "test", None

        def encode(self, texts):
            return np.full((len(texts), 384), 2.0, dtype=np.float32)

    with pytest.raises(ContractError, match=r"(?s)ml\.embedding_cache breaks its schema.*unit_norm failed"):
        embed_site(warehouse_path, SAMPLE_HOST, "broken@0", Unnormalised)
    assert _stored(warehouse_path, SAMPLE_HOST).equals(before)
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        assert (
            con.execute("SELECT count(*) FROM ml.embedding_cache WHERE model = 'broken@0'").fetchone()[0] == 0
        )


@pytest.mark.e2e
@pytest.mark.parametrize(("site", "pages"), [(SAMPLE_HOST, 1700), (NUTRI, 566), (LIGHT, 97)])
def test_asset_materialises(site, pages, request, encoder):
    run = request.getfixturevalue("sample_site" if site == SAMPLE_HOST else "light_and_nutri")
    result = run.for_site(site)
    assert result.success, failure_message(result)
    metadata = materialization_metadata(result, "page_embeddings")
    assert metadata["dagster/row_count"] == pages
    assert metadata["model"] == encoder.model_id and metadata["backend"] == "onnx"
    assert metadata["precision"] == "fp32 on cpu"  # auto: fp32 for a site of under 50,000 texts
    assert metadata["texts_embedded"] + metadata["cache_hits"] == metadata["distinct_texts"]
    assert metadata["preview"].columns == ["page_id", "vector"]
    checks = {
        e.event_specific_data.check_name: e.event_specific_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    assert checks["ml_page_embeddings_schema"] is True
    vectors = np.array(_stored(run.warehouse, site)["vector"].to_list(), dtype=np.float32)
    assert vectors.shape == (pages, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)


def test_the_step_says_which_precision_it_used_and_falls_back_to_fp32_where_int8_fails(
    warehouse_path, light_inbox, instance, encoder, monkeypatch
):
    """A site taken for a large one (APPROXIMATE_ABOVE lowered) is embedded in int8 where the check holds,
    and in fp32 where it fails (planted: a floor over 100%), the metadata saying which, with the recall."""
    monkeypatch.setattr(int8_check, "APPROXIMATE_ABOVE", 50)
    monkeypatch.setattr(int8_check, "INT8_MIN_RECALL", 1.01)
    steps = ["raw_crawl", "pages", "page_embeddings"]
    result = run_site(warehouse_path, light_inbox, instance, LIGHT, steps=steps)
    assert result.success, failure_message(result)
    metadata = materialization_metadata(result, "page_embeddings")
    assert metadata["model"] == encoder.model_id and metadata["texts_embedded"] == 97
    assert (
        metadata["precision"].startswith("fp32: int8 keeps ")
        and "under the 101% it needs" in metadata["precision"]
    )
    assert 0.98 < metadata["int8_neighbour_recall"] <= 1.0
    assert set(_stored(warehouse_path, LIGHT)["model"]) == {encoder.model_id}

    monkeypatch.setattr(int8_check, "INT8_MIN_RECALL", 0.98)
    with duckdb.connect(str(warehouse_path)) as con:  # a site embedded afresh: auto decides again
        con.execute("DELETE FROM ml.page_embeddings")
    result = run_site(warehouse_path, light_inbox, instance, LIGHT, steps=["page_embeddings"])
    metadata = materialization_metadata(result, "page_embeddings")
    assert metadata["model"] == f"{encoder.model_id}/int8" and metadata["precision"].startswith(
        "int8: int8 keeps"
    )


def test_real_crawl_neighbours_are_topical(encoder, warehouse_path, crawls):
    """A smoke test of meaning: nutrisport products' nearest product is mostly in the same category."""
    pages = _pages_in_warehouse(warehouse_path, crawls / "nutrisport/internal_html.csv", NUTRI)
    truth = pl.read_csv(crawls / "nutrisport/ground_truth_url_sections.csv").filter(
        pl.col("page_type") == "product"
    )
    products = pages.join(truth.select(pl.col("Address").alias("crawled_url"), "category"), on="crawled_url")
    vectors = encoder.encode(products["text"].to_list())
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -1)
    categories = products["category"].to_numpy()
    same = (categories[similarity.argmax(axis=1)] == categories).mean()
    chance = (products["category"].value_counts()["count"] / products.height).pow(2).sum()
    assert products.height > 150 and same > 5 * chance  # measured: 0.51 against a chance of 0.07


def test_quantising_the_encoder_says_nothing_on_the_root_logger(encoder, model_cache, tmp_path, caplog):
    """ORT advised its pre-processing on the root logger, which reached the user's console (issue 56)."""
    from interlink_pipeline.core.ml import onnx_encoder

    graph = next(path for path in sorted(model_cache.rglob("*.onnx")) if "int8" not in str(path))
    with caplog.at_level(logging.DEBUG):
        onnx_encoder._quantise(graph, tmp_path / "int8.onnx")
    assert (tmp_path / "int8.onnx").stat().st_size > 0
    assert [r.getMessage() for r in caplog.records if "pre-processing" in r.getMessage()] == []
