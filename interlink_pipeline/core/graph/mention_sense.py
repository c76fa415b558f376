"""Whether a phrase of a source's text means the page it would link to, before it becomes an anchor.

A phrase that is the target's whole proper name, written as the target writes it, means it: a lower-case
"chess game" is an ordinary phrase where the page is "Chess Game", so is "directory structure" where it is
"Directory structure" (a title in sentence case describes), and one word not written as a name is an
ordinary word (a page's name may be "else" or "much"; "the program Patzer" names one). Any other phrase (a
word of the name, another anchor the site uses for the page) means the target only where its sentence is
about it: with the phrase left out, the sentence's text is closest to the target among the site's pages
(its `nearest` pages, the source itself not counted), by the model the pages were embedded with. And no
phrase that is, or with the words around it spells out, another page's name ("pawn structure", "hugo gen"
of "hugo gen chromastyles") means its target.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from interlink_pipeline.core.text import first_clause

_WORD = re.compile(r"\w+", re.UNICODE)
LONGER_BY = 3  # words around a phrase tried for another page's longer name
CONTEXT_WORDS = 20  # words of the sentence on either side of a phrase that say what it is about
SCORED_CELLS = 1 << 25  # sentence x page similarities held at once (128 MB of float32)


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
        return cls(vectors, encode, written, glue)

    def means(self, phrases: Sequence[str], sentences: Sequence[str], sources: Sequence[int],
              targets: Sequence[int], nearest: int | None) -> list[bool]:  # fmt: skip
        """Whether each phrase, in its sentence on its source, means its target (see the module); with
        `nearest` None, sentences are not judged (what may mean its target: a planner's candidates, the
        sentences of those it plans judged once they are placed)."""
        named = [self._is_name(p, s, t) for p, s, t in zip(phrases, sentences, targets, strict=True)]
        longer = [self._in_longer_name(p, s, t) for p, s, t in zip(phrases, sentences, targets, strict=True)]
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
        initial = sentence.lstrip(" \"'“‘([«¿¡").startswith(phrase)
        return phrase in self.written[target] and not initial

    def _in_longer_name(self, phrase: str, sentence: str, target: int) -> bool:
        """Whether the phrase, or the phrase and the words right before or after it in the sentence, are
        another page's name."""
        at = sentence.lower().find(phrase.lower())
        if at < 0:
            return False
        before = _WORD.findall(sentence[:at])[-LONGER_BY:]
        after = _WORD.findall(sentence[at + len(phrase) :])[:LONGER_BY]
        words = name_key(phrase)
        names = self.names.get(words, set())
        if names and target not in names:
            return True  # the phrase is another page's whole name ("pawn structure", not Pawn Hash Table)
        for n in range(1, LONGER_BY + 1):
            for longer in (" ".join([words, *after[:n]]), " ".join([*before[len(before) - n :], words])):
                if longer != words and self.names.get(longer.lower(), {target}) - {target}:
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
    at = sentence.lower().find(phrase.lower())
    before, after = (sentence, "") if at < 0 else (sentence[:at], sentence[at + len(phrase) :])
    context = [*before.split()[-CONTEXT_WORDS:], *after.split()[:CONTEXT_WORDS]]
    return " ".join(context), source, target
