"""Words: tokenising, the site's language, and stop words (offline stopwords-iso lists)."""

from __future__ import annotations

import functools
import re

from interlink_pipeline.core.errors import InputError

LANGUAGES = ("en", "es", "fr", "de", "it", "pt", "nl")
TOKEN = r"(?u)\b[^\W\d_][^\W_]+\b"  # words of 2+ characters that are not numbers
_CLAUSE_END = re.compile(r"\s+[|:–—-]\s+|[:,;(]\s*")


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


def first_clause(text: str | None) -> str:
    """A title's own words: the part before ' | ', ': ', ' - ', ','; a leading dot is one of them (the
    directive ".SAVEREG")."""
    return _CLAUSE_END.split((text or "").strip())[0].rstrip(" .") if text else ""


def page_name(title: str | None, h1: str | None) -> str:
    """A page's name: its H1's own words, else its title's; the title's where the H1 is their tail, a
    heading that leaves its subject to the title ("functions" on the page titled "<cuchar> functions": a
    word many pages bear, which names none of them)."""
    heading, titled = first_clause(h1), first_clause(title)
    if heading and titled.lower().endswith(" " + heading.lower()):
        return titled
    return heading or titled


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


# Articles, prepositions and conjunctions: what a phrase should not end (or start) on. Much smaller than the
# stop-word lists, which also hold content words ("cases", "best", "home").
FUNCTION_WORDS = {
    "en": "a an the of for to in on at by with from and or your our vs how what when which is are",
    "es": "el la los las un una de del para por con en y o a al su tu que",
    "fr": "le la les un une de des du pour par avec en et ou à au aux sur votre",
    "de": "der die das den dem des ein eine einen für mit von zu zum zur und oder in im am auf",
    "it": "il lo la i gli le un una di del della per con in e o a al su",
    "pt": "o a os as um uma de do da para por com em e ou no na",
    "nl": "de het een van voor met in en of op aan te",
}


def function_words(language: str) -> frozenset[str]:
    return frozenset(FUNCTION_WORDS.get(language, FUNCTION_WORDS["en"]).split())
