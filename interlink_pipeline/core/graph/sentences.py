"""Sentences an editor can link in: where a phrase of a page's flattened text stands as words of its own,
in a sentence (not code, a table row, a heading, a title or a citation), and not inside a longer name."""

from __future__ import annotations

import re
from itertools import islice, pairwise
from typing import NamedTuple

from interlink_pipeline.core.text import FUNCTION_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)
# where a sentence ends: . ! ? before a space, a line break, the ' : ' or ' | ' a page's flattened
# headings, definition lists and tables leave between their parts, and a documentation page's usual section
# heading run into the text ("… disabled Remarks No profile data …": the heading ends one sentence and the
# next starts after it)
_SECTION_HEADINGS = (
    "Overview|Remarks|Synopsis|Usage|Syntax|Examples?|Parameters|Arguments|Returns?|Return value|"
    "Requirements|Description|Notes?|See also|Prerequisites|Summary"
)
_SENTENCE_END = re.compile(
    rf"[.!?]+[\"'”’)\]]*(?=\s|$)|\n|\s[:|]\s|(?P<heading>(?:^|\s)(?:{_SECTION_HEADINGS})\s(?=[A-Z]))"
)

_TERMINATED = re.compile(r"[.!?][\"'”’)\]]*$")  # how a sentence an editor can link in ends
_TABLE_DEBRIS = re.compile(r"\|| :?-{2,}:?|\t")
ANCHOR_BEFORE = set(" \n\t\"'“‘([«¿¡")  # what may stand right before an anchor in a sentence
ANCHOR_AFTER = set(" \n\t,;!?)\"'”’]»")  # ... and right after it (and . or : at a sentence's end)
_JOINS_OK = re.compile(r"^(?: |-|'|’)$")  # between an anchor's words
MIN_SENTENCE_WORDS = 4  # shorter is a heading, a label or a table cell, not a sentence to link in


def sentence_bounds(text: str, start: int, end: int, lead: int = 0) -> tuple[int, int]:
    """The character range of the sentence of `text` that holds [start, end); the text's first `lead`
    characters (the page's own heading at its start) are a sentence of their own."""
    left = max(lead if start >= lead else 0, start - 2000)
    begin = left
    for found in _SENTENCE_END.finditer(text, left, start):
        begin = found.end()
    after = _SENTENCE_END.search(text, end, end + 2000)
    if after is None:
        return begin, min(len(text), end + 2000)
    return begin, after.start() if after.group("heading") else after.end()


def heading_lead(text: str | None, headings: list[str | None]) -> int:
    """How many characters at the start of `text` are the page's own heading (its H1 or title, as
    flattened text keeps it before the first sentence): 0 when the text starts otherwise."""
    lowered = (text or "").lower()
    for heading in headings:
        name = (heading or "").strip().lower()
        if name and lowered.startswith(name) and lowered[len(name) : len(name) + 1].isspace():
            return len(name)
    return 0


class Mention(NamedTuple):
    """A phrase of the source's text an editor can link in place: the text as written, its offset, and the
    sentence that holds it."""

    text: str
    offset: int
    sentence: str


def placed_mention(text: str | None, offset: int | None, words: int, lead: int = 0) -> Mention | None:
    """The `words`-word phrase of `text` at character `offset`, when it stands in a sentence as words of
    their own: not inside code or a file name (`postcss` of `postcss.config.mjs`), not across a sentence's
    end, not in a table row or a heading (the page's own, its first `lead` characters, included); else
    None."""
    if not text or offset is None or offset < lead or words < 1:
        return None
    tokens = list(islice(_WORD.finditer(text.lower(), offset), words))
    if len(tokens) < words or tokens[0].start() != offset:
        return None
    end = tokens[-1].end()
    if not _stands_alone(text, offset, end):
        return None
    if any(not _JOINS_OK.match(text[a.end() : b.start()]) for a, b in pairwise(tokens)):
        return None
    begin, stop = sentence_bounds(text, offset, end, lead)
    if (ending := _SENTENCE_END.match(text, stop)) and ending.group("heading"):
        return None  # a line a section heading follows: a synopsis or a quoted message, not a sentence
    if inside_longer_name(text, offset, end, begin):
        return None  # "York" of "New York City Subway": the name means something else
    sentence = text[begin:stop].strip()
    if not _TERMINATED.search(sentence):
        return None  # a list item, a caption, a "see also" line, or a run of them: no sentence ends it
    return Mention(text[offset:end], offset, sentence) if readable(sentence) else None


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] stands as words of their own: a space, a quote or a bracket right before
    it, and right after it one of those, a comma and the like, or a sentence's closing . or :."""
    if start and text[start - 1] not in ANCHOR_BEFORE:
        return False
    if end < len(text) and text[end] not in ANCHOR_AFTER:
        return text[end] in ".:" and (end + 1 == len(text) or text[end + 1].isspace())
    return True


def anchor_at(sentence: str, anchor: str) -> int:
    """Where a planned anchor stands in its sentence, as placed_mention placed it (words of their own):
    the "(Ken)" of "Kenneth Ward (Ken) Church", not the "Ken" of "Kenneth"; -1 where it does not. What the
    report marks (templates/anchor.js, by the same characters) and a review sample brackets."""
    at = sentence.find(anchor) if anchor else -1
    while at >= 0 and not _stands_alone(sentence, at, at + len(anchor)):
        at = sentence.find(anchor, at + 1)
    return at


# the short words a name runs on through ("Bank of England", "Real Madrid de …")
_NAME_CONNECTORS = frozenset(
    ("of", "de", "del", "della", "di", "du", "des", "da", "von", "van", "der", "den", "la", "le", "y")
)
_WORD_BEFORE = re.compile(r"([\w'’.]+)[ -]$")
_WORD_AFTER = re.compile(r"[ -]([\w'’]+)")


def inside_longer_name(text: str, start: int, end: int, sentence_start: int) -> bool:
    """Whether text[start:end] is part of a longer name in its sentence: a capitalised word runs on right
    before it (not the sentence's first word, capitalised by position) or right after it, by a space or a
    hyphen, or through a connector ("Bank of England"): "York" in "New York City Subway", "Baseball" in
    "Major League Baseball", "Wales" in "South Wales Railway"."""

    def capitalised(word: str) -> bool:
        return word[:1].isupper()

    def words_before(at: int) -> tuple[str, int] | None:
        found = _WORD_BEFORE.search(text, max(sentence_start, at - 80), at)
        return (found.group(1), found.start(1)) if found else None

    def sentence_initial(at: int) -> bool:
        return not text[sentence_start:at].strip(" \n\t\"'“‘([«¿¡")

    before = words_before(start)
    if before is not None:
        word, at = before
        if capitalised(word) and not sentence_initial(at):
            return True
        if word.lower() in _NAME_CONNECTORS and (farther := words_before(at)) and capitalised(farther[0]):
            return True
    after = _WORD_AFTER.match(text, end)
    if after is not None:
        word = after.group(1)
        if capitalised(word):
            return True
        if word in _NAME_CONNECTORS and (farther := _WORD_AFTER.match(text, after.end())):
            return capitalised(farther.group(1))
    return False


PLACES_TRIED = 5  # a phrase's occurrences tried, first to last, for one an editor can link in place


def first_placed(text: str | None, offset: int | None, words: int, lead: int = 0) -> Mention | None:
    """The first occurrence of the `words`-word phrase at `offset`, from there on, that placed_mention
    places: the same name in the page's heading or a quoted message stands again in a sentence below."""
    if not text or offset is None or offset < 0 or words < 1:
        return None
    tokens = list(islice(_WORD.finditer(text.lower(), offset), words))
    if len(tokens) < words:
        return None
    phrase = re.escape(text[offset : tokens[-1].end()].lower())
    places = re.finditer(phrase, text.lower()[offset:])
    for found in (m.start() + offset for m in islice(places, PLACES_TRIED)):
        if (mention := placed_mention(text, found, words, lead)) is not None:
            return mention
    return None


_LONG_WORD = re.compile(r"[^\W\d_][\w'’-]{3,}")  # a word of four letters or more: past most function words


_TITLE_GLUE = frozenset(w for words in FUNCTION_WORDS.values() for w in words.split())


def title_cased(sentence: str) -> bool:
    """Whether every word of four letters or more after the first, function words aside, is capitalised
    (two such words at least): a title — a publication's, a forum post's, a heading's — not running text
    to link in ("An Analysis of the Alpha-Beta Pruning Algorithm.", "Reinforcement Learning with
    Hierarchies of Machines.")."""
    words = [w for w in _LONG_WORD.findall(sentence)[1:] if w.lower() not in _TITLE_GLUE]
    return len(words) >= 2 and all(w[0].isupper() for w in words)


# a citation: "by <one to four words>, <where>, <Month> <day>, <year>" (a forum post's, a paper's)
_CITATION = re.compile(
    r"\bby [\w'’.-]+(?: [\w'’.-]+){0,3}, [^,.]{2,60}, (?:(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"[a-z]*\.? \d{1,2}, )?\d{4}\b"
)


def readable(sentence: str) -> bool:
    """A sentence an editor can put a link in: MIN_SENTENCE_WORDS words or more, no table row's debris,
    not a title, not a run of citations (a post's or a paper's title is not running text)."""
    return (
        len(sentence.split()) >= MIN_SENTENCE_WORDS
        and not _TABLE_DEBRIS.search(sentence)
        and not title_cased(sentence)
        and not _CITATION.search(sentence)
    )
