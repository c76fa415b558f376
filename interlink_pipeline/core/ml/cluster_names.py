"""Topic clusters' names: each cluster's best 1–2-word phrase by class-based TF-IDF (frequent in the cluster,
rare in the others), as its pages write it; or the URL folder most of its pages share where the phrase
names few of them; every name distinct."""

from __future__ import annotations

import re
from collections import Counter
from itertools import count, pairwise

import numpy as np
import polars as pl

from interlink_pipeline.core.text import words

FOLDER_SHARE = 0.6  # a cluster whose pages mostly sit in one URL folder that it mostly holds ...
PHRASE_COVERAGE = 0.25  # ... is named after it when its best phrase is in fewer than this share of them
FOLDER_MIN_PAGES = 5  # (a folder names a handful of pages no better than their own titles do)


def label_clusters(
    texts: list[str],
    labels: np.ndarray,
    stops: frozenset[str] | set[str],
    top_terms: int,
    *,
    paths: list[str] | None = None,
    closeness: np.ndarray | None = None,
) -> pl.DataFrame:
    """cluster_id, label and top_terms for every cluster, by class-based TF-IDF over 1-2-word phrases. The
    label is the best phrase as the pages write it ("GetPage", not "Getpage"); a cluster whose best phrase
    names few of its pages, and whose pages mostly share a URL folder (`paths`), is named after the folder
    (travel guides under /guides/: "Guides", not "Time"); one with no phrase at all after its most central
    page (`closeness` to its centroid)."""
    from sklearn.feature_extraction.text import CountVectorizer

    clusters = np.unique(labels)

    def phrases(text: str) -> list[str]:
        # bigrams only from adjacent content words: "boots for the trip" gives no "boots trip"
        tokens = words(text)
        kept = [w for w in tokens if w not in stops]
        return kept + [f"{a} {b}" for a, b in pairwise(tokens) if a not in stops and b not in stops]

    try:
        vectorizer = CountVectorizer(analyzer=phrases, min_df=2 if len(texts) > 50 else 1)
        counts = vectorizer.fit_transform(texts)
    except ValueError:  # no vocabulary (e.g. every word is a stop word)
        return pl.DataFrame(
            {
                "cluster_id": clusters.astype(np.int32),
                "label": [f"cluster {c}" for c in clusters],
                "top_terms": [[] for _ in clusters],
            },
            schema_overrides={"top_terms": pl.List(pl.String)},
        )
    terms = vectorizer.get_feature_names_out()
    ctfidf = _class_tfidf(counts, labels, clusters)
    folders = [_folder(path) for path in paths] if paths else []
    folder_sizes = Counter(folders)
    rows = []
    for row, cluster in enumerate(clusters):
        order = np.argsort(-ctfidf[row])[:top_terms]
        top = [terms[i] for i in order if ctfidf[row, i] > 0]
        members = np.flatnonzero(labels == cluster)
        phrase = _best_phrase(top, ctfidf[row], vectorizer.vocabulary_)
        coverage = (counts[members][:, vectorizer.vocabulary_[phrase]] > 0).mean() if phrase else 0.0
        folder = (
            _shared_folder([folders[i] for i in members], folder_sizes)
            if folders and coverage < PHRASE_COVERAGE and len(members) >= FOLDER_MIN_PAGES
            else None
        )
        rows.append((int(cluster), folder or _phrase_label(phrase, members, texts, closeness), top))
    frame = pl.DataFrame(
        rows,
        schema={"cluster_id": pl.Int32, "label": pl.String, "top_terms": pl.List(pl.String)},
        orient="row",
    )
    return distinct_labels(frame)


def _class_tfidf(counts, labels: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """Each cluster's phrase scores (clusters x phrases): frequent in the cluster, rare in the others."""
    from scipy import sparse

    membership = sparse.csr_matrix(
        (np.ones(len(labels)), (np.searchsorted(clusters, labels), np.arange(len(labels)))),
        shape=(len(clusters), len(labels)),
    )
    per_cluster = np.asarray((membership @ counts).todense(), dtype=np.float64)
    tf = per_cluster / np.clip(per_cluster.sum(axis=1, keepdims=True), 1, None)
    average_words = per_cluster.sum() / len(clusters)
    idf = np.log1p(average_words / np.clip(per_cluster.sum(axis=0), 1, None))
    return tf * idf


def _best_phrase(top: list[str], scores: np.ndarray, vocabulary: dict[str, int]) -> str | None:
    """The best phrase; a two-word phrase beats its own single word when it scores at least half as well."""
    if not top:
        return None
    best = top[0]
    if " " not in best:
        for phrase in top[1:]:
            if (
                " " in phrase
                and best in phrase.split()
                and scores[vocabulary[phrase]] >= 0.5 * scores[vocabulary[best]]
            ):
                return phrase
    return best


def _phrase_label(
    phrase: str | None, members: np.ndarray, texts: list[str], closeness: np.ndarray | None
) -> str:
    """The phrase as the cluster's pages write it; without one, the title of its most central page."""
    if phrase:
        return _as_written(phrase, [texts[i] for i in members])
    central = members[np.argmax(closeness[members])] if closeness is not None else members[0]
    return _short_label(texts[central])


def _as_written(phrase: str, texts: list[str]) -> str:
    """The phrase as the cluster's texts most often write it, capitalised when they write it in lower case."""
    pattern = re.compile(r"\b" + r"\W+".join(map(re.escape, phrase.split())) + r"\b", re.IGNORECASE)
    written = Counter(m.group(0) for text in texts for m in pattern.finditer(text))
    form = written.most_common(1)[0][0] if written else phrase
    return form[0].upper() + form[1:] if form.islower() else form


def _folder(path: str) -> str:
    return path.rstrip("/").rpartition("/")[0]


def _shared_folder(folders: list[str], folder_sizes: Counter) -> str | None:
    """As a name, the URL folder (below the root) that holds at least FOLDER_SHARE of a cluster's pages
    (`folders`) and whose pages are at least FOLDER_SHARE in the cluster: the site's own name for them."""
    folder, held = Counter(folders).most_common(1)[0]
    if not folder or held < FOLDER_SHARE * max(len(folders), folder_sizes[folder]):
        return None
    name = re.sub(r"[-_]+", " ", folder.rpartition("/")[2]).strip()
    return name[:1].upper() + name[1:] if name else None


def _short_label(text: str, limit: int = 40) -> str:
    text = " ".join(text.split()) or "misc"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def distinct_labels(frame: pl.DataFrame) -> pl.DataFrame:
    """No two clusters share a label: one whose label is taken gets its next distinguishing term appended
    (the first such term that makes it new), else a number."""
    taken: set[str] = set()
    labels = []
    for label, top in zip(frame["label"], frame["top_terms"], strict=True):
        extras = (f"{label} · {t.title()}" for t in top if t.lower() not in label.lower())
        numbered = (f"{label} ({n})" for n in count(2))
        if label in taken:
            label = next((e for e in extras if e not in taken), None) or next(
                n for n in numbered if n not in taken
            )
        taken.add(label)
        labels.append(label)
    return frame.with_columns(pl.Series("label", labels, dtype=pl.String))
