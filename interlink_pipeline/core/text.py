"""Words: tokenising, the site's language, and stop words (offline stopwords-iso lists)."""

from __future__ import annotations

import functools
import re

from interlink_pipeline.core.errors import InputError

LANGUAGES = ("en", "es", "fr", "de", "it", "pt", "nl")
TOKEN = r"(?u)\b[^\W\d_][^\W_]+\b"  # words of 2+ characters that are not numbers


def words(text: str) -> list[str]:
    return re.findall(TOKEN, text.lower())


@functools.lru_cache(maxsize=64)
def _stopwords(language: str) -> frozenset[str]:
    import stopwordsiso

    if not stopwordsiso.has_lang(language):
        raise InputError(
            f"no stop words for language '{language}'; use an ISO 639-1 code such as en, es, de."
        )
    return frozenset(stopwordsiso.stopwords(language))


def detect_language(texts: list[str]) -> str:
    """The language whose stop words cover most of the texts' words (among LANGUAGES)."""
    tokens = [w for t in texts[:5000] for w in words(t)]
    if not tokens:
        return "en"
    coverage = {lang: sum(w in _stopwords(lang) for w in tokens) for lang in LANGUAGES}
    return max(coverage, key=coverage.get)


def stop_words(language: str, extra: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> frozenset[str]:
    """The language's stop words, plus `extra`, minus `keep`."""
    return (_stopwords(language) | {w.lower() for w in extra}) - {w.lower() for w in keep}
