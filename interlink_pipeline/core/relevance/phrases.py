"""The target's phrases found in the source's text: its title and H1, and the anchors the site's links
already use for it."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np
import polars as pl

from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals

# Anchors that say nothing about the target, in any site: never phrases of it, never a planned anchor
# (the site's own generic phrases are found by the plan's anchor rules, graph/anchors.py).
GENERIC_ANCHORS = frozenset(
    {"here", "click here", "read more", "more", "learn more", "this", "link", "this link", "this page",
     "page", "see", "details", "more details", "website", "home", "next", "previous", "prev", "back", "top",
     "continue reading", "this example", "example", "examples", "the example", "this article", "article",
     "this post", "post", "this guide", "guide", "documentation", "the documentation", "docs", "file",
     "files", "info", "information", "source", "view", "download", "below", "above", "following",
     "the following", "it", "that", "there", "more info", "find out more", "go", "go to", "this section",
     "section", "overview", "introduction", "menu", "index", "list", "all", "other", "related"}
)  # fmt: skip
# an anchor that begins with one points at something in the sentence's context ("these options", "this
# directory structure"), not at the page it links
DEMONSTRATIVES = frozenset(
    {"this", "these", "that", "those", "este", "esta", "estos", "estas", "ese", "esa", "esos", "esas", "ce",
     "cet", "cette", "ces", "dieser", "diese", "dieses", "diesen", "questo", "questa", "questi", "queste"}
)  # fmt: skip
# an indefinite article in lower case starts a description of a kind ("a chess program"), not a page's name
# ("A Tale of Two Cities" is one)
INDEFINITES = frozenset({"a", "an", "un", "una", "une", "uno", "ein", "eine", "einen", "einem", "einer"})
_TOKEN = re.compile(r"\w+", re.UNICODE)


class PhraseIndex:
    """The target's phrases found in the source's text: its title and H1, and the anchors the site's
    links already use for it (each anchor weighted by its commonness: the share of that anchor's links
    that point to this target)."""

    def __init__(self, signals: SiteSignals, links: LinkGraph, options: CandidateOptions):
        self.signals, self.options = signals, options
        counts: dict[tuple[str, ...], Counter] = defaultdict(Counter)
        titled: dict[tuple[str, ...], set[int]] = defaultdict(set)
        for field in ("title", "h1"):
            for page, text in enumerate(signals.texts.get(field) or []):
                phrase = _phrase(text, options.max_phrase_words)
                if phrase:
                    titled[phrase].add(page)
        # each distinct (anchor, target) once: a site's links repeat a few anchors (its menus) many times
        used = (
            pl.DataFrame(
                [
                    pl.Series("anchor", links.anchor.tolist(), dtype=pl.String),  # an object array: None, str
                    pl.Series("target", links.target, dtype=pl.Int64),
                ]
            )
            .group_by("anchor", "target", maintain_order=True)  # first use first: ties break the same way
            .len()
        )
        phrase_of = {a: _phrase(a, options.max_phrase_words) for a in used["anchor"].unique().to_list()}
        for anchor, target, times in used.iter_rows():
            phrase = phrase_of[anchor]
            if phrase and " ".join(phrase) not in GENERIC_ANCHORS:
                counts[phrase][target] += times
        self.titled = titled
        self.commonness: dict[tuple[str, ...], dict[int, float]] = {}
        for phrase in set(counts) | set(titled):
            linked = counts.get(phrase, Counter())
            # a title is one more vote for its page
            votes = Counter(linked) + Counter(dict.fromkeys(titled.get(phrase, ()), 1))
            total = sum(votes.values())
            self.commonness[phrase] = {t: v / total for t, v in votes.items()}
        self.first_words = {p[0] for p in self.commonness}

    def find(self, sources: np.ndarray | None = None) -> pl.DataFrame:
        """source, target, mention_commonness, mention_words, mention_title, offset (first character); for
        the pages of the `sources` mask only when it is given."""
        rows = self._best_matches(sources)
        if not rows:
            return pl.DataFrame(
                schema={
                    "source": pl.Int64, "target": pl.Int64, "mention_commonness": pl.Float32,
                    "mention_words": pl.Float32, "mention_title": pl.Float32, "mention_offset": pl.Int64,
                }
            )  # fmt: skip
        keys = np.array(list(rows), dtype=np.int64)
        values = list(rows.values())
        found = pl.DataFrame(
            {
                "source": keys[:, 0],
                "target": keys[:, 1],
                "mention_commonness": np.array([v[0] for v in values], dtype=np.float32),
                "mention_words": np.array([v[1] for v in values], dtype=np.float32),
                "mention_title": np.array([v[2] for v in values], dtype=np.float32),
                "mention_offset": np.array([v[3] for v in values], dtype=np.int64),
            }
        )
        # the strongest mentions per source: specific (common for this target) and long phrases first
        return (
            found.sort(
                ["source", "mention_commonness", "mention_words", "target"],
                descending=[False, True, True, False],
            )
            .group_by("source", maintain_order=True)
            .head(self.options.mentions_per_page)
        )

    def _best_matches(self, sources: np.ndarray | None) -> dict[tuple[int, int], list]:
        """Per (source, target): [share, words, titled, offset] of the target's best phrase in the source's
        text (its body, else its meta description): the most common for the target, then the longest;
        titled when that phrase, or one found after it, is the target's title or H1."""
        rows: dict[tuple[int, int], list] = {}
        body = self.signals.texts.get("body") or [None] * self.signals.n
        meta = self.signals.texts.get("meta_description") or [None] * self.signals.n
        longest = self.options.max_phrase_words
        for source in range(self.signals.n) if sources is None else np.flatnonzero(sources).tolist():
            text = body[source] or meta[source]
            if not text:
                continue
            matches = list(_TOKEN.finditer(text.lower()))
            tokens = [m.group() for m in matches]
            for i, token in enumerate(tokens):
                if token not in self.first_words:
                    continue
                for length in range(1, min(longest, len(tokens) - i) + 1):
                    phrase = tuple(tokens[i : i + length])
                    targets = self.commonness.get(phrase)
                    if not targets:
                        continue
                    for target, share in targets.items():
                        if target == source:
                            continue
                        titled = target in self.titled.get(phrase, ())
                        seen = rows.get((source, target))
                        if seen is None or (share, length) > (seen[0], seen[1]):
                            rows[(source, target)] = [share, length, titled, matches[i].start()]
                        elif titled:
                            seen[2] = True
        return rows


def _phrase(text: str | None, max_words: int) -> tuple[str, ...] | None:
    if not text:
        return None
    tokens = tuple(_TOKEN.findall(text.lower()))
    if not tokens or len(tokens) > max_words or (len(tokens) == 1 and len(tokens[0]) < 3):
        return None
    return tokens
