"""Whether a phrase of a source's text means the page it would link to, before it becomes an anchor.

A phrase that is the target's whole proper name, written as the target writes it, means it: a lower-case
"chess game" is an ordinary phrase where the page is "Chess Game", so is "directory structure" where it is
"Directory structure" (a title in sentence case describes), and one word not written as a name is an
ordinary word (a page's name may be "else" or "much"; "the program Patzer" names one). Any other phrase (a
word of the name, another anchor the site uses for the page) means the target only where its sentence is
about it: with the phrase left out, the sentence's text is closest to the target among the site's pages
(its `nearest` pages, the source itself not counted), by the model the pages were embedded with. And no
phrase that is, or with the words around it spells out, another page's name ("pawn structure", "hugo gen"
of "hugo gen chromastyles") means its target. A name of one word means it only written in the case the
site's own text writes that word inside its sentences: where the site writes "Nebula" (a program), "a
nebula" is another word; where it writes "recursion", "Primitive Recursion" is a title's word, asked of its
sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.sentences import anchor_at
from interlink_pipeline.core.text import first_clause

_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_INSIDE_AFTER = frozenset(",;)]")  # what a word inside a sentence may follow, besides a word
LONGER_BY = 3  # words around a phrase tried for another page's longer name
CONTEXT_WORDS = 20  # words of the sentence on either side of a phrase that say what it is about
SCORED_CELLS = 1 << 25  # sentence x page similarities held at once (128 MB of float32)
CASE_READ_CHARS = 20_000_000  # text read for its names' case (7M: 1 s); past it, every k-th page's


def name_key(text: str | None) -> str:
    """A name as its words in lower case: 'safe.HTML' and 'safe HTML' are one name."""
    return " ".join(_WORD.findall((text or "").lower()))


@dataclass
class MentionSense:
    """What tells a phrase that means its target from a word that happens to be in its name."""

    vectors: np.ndarray  # unit-norm page vectors, row = page
    encode: Callable[[Sequence[str]], np.ndarray]  # the pages' encoder: texts -> unit-norm vectors
    written: list[frozenset[str]]  # each page's names as written: its title, H1 and their first clauses
    glue: frozenset[str]  # the language's function words: "The King" is one word of a name
    # each one-word name the site's text writes inside its sentences -> whether mostly with a capital
    site_case: dict[str, bool] = field(default_factory=dict)
    names: dict[str, set[int]] = field(init=False)  # each name_key -> the pages that bear it
    _closer: dict[tuple[str, int, int], int] = field(default_factory=dict)  # sentences already judged

    def __post_init__(self) -> None:
        self.names = {}
        for row, names in enumerate(self.written):
            for key in filter(None, map(name_key, names)):
                self.names.setdefault(key, set()).add(row)

    @classmethod
    def of(
        cls, pages: pl.DataFrame, vectors: np.ndarray, encode: Callable, glue: frozenset[str]
    ) -> MentionSense:
        """The sense of a site's pages (title, h1), their vectors and the encoder that made them."""
        written = [
            frozenset(n for n in (title, h1, first_clause(title), first_clause(h1)) if n)
            for title, h1 in pages.select("title", "h1").iter_rows()
        ]
        sense = cls(vectors, encode, written, glue)
        sense.site_case = site_case(pages["body_text"], {key for key in sense.names if " " not in key} - glue)
        return sense

    def means(self, phrases: Sequence[str], sentences: Sequence[str], sources: Sequence[int],
              targets: Sequence[int], nearest: int | None) -> list[bool]:  # fmt: skip
        """Whether each phrase, in its sentence on its source, means its target (see the module); with
        `nearest` None, sentences are not judged (what may mean its target: a planner's candidates, the
        sentences of those it plans judged once they are placed)."""
        named = [self._is_name(p, s, t) for p, s, t in zip(phrases, sentences, targets, strict=True)]
        longer = [
            self._in_longer_name(p, s, t) or self._another_word(p, s, t)
            for p, s, t in zip(phrases, sentences, targets, strict=True)
        ]
        ask = [i for i, (n, x) in enumerate(zip(named, longer, strict=True)) if not n and not x]
        if nearest is None:
            return [not x for x in longer]
        closer = self._pages_closer([(sentences[i], phrases[i], sources[i], targets[i]) for i in ask])
        verdict = [bool(n) and not x for n, x in zip(named, longer, strict=True)]
        for i, pages in zip(ask, closer, strict=True):
            verdict[i] = pages < nearest
        return verdict

    def _is_name(self, phrase: str, sentence: str, target: int) -> bool:
        """Whether the phrase is the target's whole name written as the target writes it: a proper name of
        several words with its words' case (its first letter aside: "Pawn Hash Table", "safe.HTML"; "chess
        game" is not Chess Game), a name of one word besides function words exactly, and not as the
        sentence's first word. A title in sentence case ("Directory structure") is a description, not a
        name: "with this directory structure" says so only where its sentence is about the page."""
        key = name_key(phrase)
        if target not in self.names.get(key, ()):
            return False
        if sum(word not in self.glue for word in key.split()) > 1:
            return any(_same_case(phrase, name) and _proper(name) for name in self.written[target])
        written = phrase in self.written[target] and self._as_site_writes(phrase)
        return written and not _initial(phrase, sentence)

    def _as_site_writes(self, phrase: str) -> bool:
        """Whether a word has the case the site's text writes it in inside its sentences (or the site's
        text does not say)."""
        capital = self.site_case.get(phrase.lower())
        return capital is None or capital == phrase[:1].isupper()

    def _another_word(self, phrase: str, sentence: str, target: int) -> bool:
        """Whether a word inside its sentence is in lower case where the target's name is that word with a
        capital and the site writes it so: the name's namesake ("a nebula"; the site's Nebula, a program)."""
        if not phrase.islower() or self.site_case.get(phrase) is not True or phrase in self.written[target]:
            return False
        return target in self.names.get(phrase, ()) and not _initial(phrase, sentence)

    def _in_longer_name(self, phrase: str, sentence: str, target: int) -> bool:
        """Whether the phrase, or the phrase with words right before it, after it or both in the sentence,
        is another page's name ("Levy versus [[Cray Blitz]] 1984", a match's page, not the program's)."""
        at = _phrase_at(sentence, phrase)
        if at < 0:
            return False
        before = _WORD.findall(sentence[:at])[-LONGER_BY:]
        after = _WORD.findall(sentence[at + len(phrase) :])[:LONGER_BY]
        words = name_key(phrase)
        names = self.names.get(words, set())
        if names and target not in names:
            return True  # the phrase is another page's whole name ("pawn structure", not Pawn Hash Table)
        for b in range(len(before) + 1):
            for a in range(len(after) + 1):
                longer = " ".join([*before[len(before) - b :], words, *after[:a]]).lower()
                if (a or b) and self.names.get(longer, {target}) - {target}:
                    return True
        return False

    def _pages_closer(self, asked: list[tuple[str, str, int, int]]) -> list[int]:
        """How many pages but the source each sentence, its phrase left out, is closer to than to the
        target."""
        new = list(dict.fromkeys(key for key in (_context_key(*a) for a in asked) if key not in self._closer))
        if new:
            embedded = self.encode([context for context, _, _ in new])
            rows = max(1, SCORED_CELLS // max(1, self.vectors.shape[0]))
            for start in range(0, len(new), rows):
                chunk = new[start : start + rows]
                sims = embedded[start : start + len(chunk)] @ self.vectors.T
                for k, (context, source, target) in enumerate(chunk):
                    row = sims[k]
                    closer = int((row > row[target]).sum()) - int(row[source] > row[target])
                    self._closer[(context, source, target)] = closer
        return [self._closer[_context_key(*a)] for a in asked]


def site_case(texts: pl.Series, words: set[str]) -> dict[str, bool]:
    """For each of `words` (lower case) that the texts write inside a sentence (after a word or a comma,
    not after a full stop or at a line's start), whether they write it with a capital of its own (between
    words in lower case: "the engine Nebula plays", not "Magic Bitboards", a title's words) more often than
    in lower case. Past CASE_READ_CHARS of text, every k-th text is read: a majority needs no more."""
    capital: dict[str, int] = {}
    lower: dict[str, int] = {}
    texts = texts.drop_nulls()
    every = -(-int(texts.str.len_chars().sum() or 0) // CASE_READ_CHARS) or 1
    for text in texts.gather_every(every):
        for line in text.splitlines():
            tokens = _TOKEN.findall(line)
            for i in range(1, len(tokens)):
                word, before, after = tokens[i], tokens[i - 1], "".join(tokens[i + 1 : i + 2])
                key = word.lower()
                inside = before[:1].isalnum() or before in _INSIDE_AFTER
                if key not in words or not inside or not word[:1].isalpha():
                    continue
                if word[:1].islower():
                    lower[key] = lower.get(key, 0) + 1
                elif not before[:1].isupper() and not after[:1].isupper():
                    capital[key] = capital.get(key, 0) + 1
    return {key: capital.get(key, 0) > lower.get(key, 0) for key in capital.keys() | lower.keys()}


def _phrase_at(sentence: str, phrase: str) -> int:
    """Where the phrase stands in its sentence: where the planner places it as words of their own
    (sentences.anchor_at), else its first occurrence in any case; -1 where it is not there."""
    at = anchor_at(sentence, phrase)
    return at if at >= 0 else sentence.lower().find(phrase.lower())


def _initial(phrase: str, sentence: str) -> bool:
    """Whether the phrase is its sentence's first word (its capital then says nothing)."""
    return sentence.lstrip(" \"'“‘([«¿¡").startswith(phrase)


def _same_case(phrase: str, name: str) -> bool:
    """Whether the phrase writes the name's words as the name does, the first letter's case aside."""
    words, named = _WORD.findall(phrase), _WORD.findall(name)
    if len(words) != len(named) or not words:
        return False
    return (
        words[0][:1].lower() == named[0][:1].lower()
        and words[0][1:] == named[0][1:]
        and words[1:] == named[1:]
    )


def _proper(name: str) -> bool:
    """Whether a name of several words is a proper name: a word after its first has a capital."""
    return any(word != word.lower() for word in _WORD.findall(name)[1:])


def _context_key(sentence: str, phrase: str, source: int, target: int) -> tuple[str, int, int]:
    """The sentence's CONTEXT_WORDS words on either side of the phrase, the phrase left out, and the pair
    it is asked for."""
    at = _phrase_at(sentence, phrase)
    before, after = (sentence, "") if at < 0 else (sentence[:at], sentence[at + len(phrase) :])
    context = [*before.split()[-CONTEXT_WORDS:], *after.split()[:CONTEXT_WORDS]]
    return " ".join(context), source, target
