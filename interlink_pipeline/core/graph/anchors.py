"""Anchors: each planned link's text. Anchors vary per link to the same target: the phrase the source's own
text already uses for it, else a whole phrase of the target's H1 or title, kept short; no anchor text points
at more than anchor_max_targets pages across the site."""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.text import detect_language, function_words

_CUT = re.compile(r"\s+[|:–—-]\s+|[:,;(]\s*")
_WORD = re.compile(r"\w+", re.UNICODE)


def first_clause(text: str | None) -> str:
    """A title's own words: the part before ' | ', ': ', ' - ', ','."""
    return _CUT.split((text or "").strip())[0].strip(" .") if text else ""


def anchor_phrases(title: str | None, h1: str | None, max_words: int, glue: frozenset[str]) -> list[str]:
    """Anchors for one target, best first, each a whole phrase of its H1 or title — never cut mid-phrase:
    each clause (the first ones first; of the title, only the first) when it has at most `max_words`
    words, else the phrases between its function words ('How to Choose a Sleeping Bag for Winter Camping'
    gives 'Sleeping Bag', 'Winter Camping', …), longest first (single words only as a last resort)."""
    phrases: list[str] = []
    clauses = [first_clause(h1), first_clause(title)]
    # the H1's later clauses too (a title's may be branding: 'Hiking Boots | Alpine Gear')
    clauses += [c.strip(" .") for c in _CUT.split((h1 or "").strip())[1:]]
    for clause in clauses:
        words = clause.split()
        if not words:
            continue
        if len(words) <= max_words:
            phrases.append(clause)
            continue
        chunks: list[list[str]] = [[]]
        for word in words:
            if word.lower().strip(".,!?¿¡") in glue:
                chunks.append([])
            else:
                chunks[-1].append(word)
        fitting = [c for c in chunks if 0 < len(c) <= max_words]
        phrases += [" ".join(c) for c in sorted(fitting, key=len, reverse=True)]
    seen: set[str] = set()
    distinct = []
    for phrase in sorted(phrases, key=lambda p: len(p.split()) < 2):  # stable: phrases of 2+ words first
        if phrase.lower() not in seen:
            seen.add(phrase.lower())
            distinct.append(phrase)
    return distinct


def mention_span(text: str | None, offset: int | None, words: int) -> str | None:
    """The `words`-word phrase of `text` starting at character `offset`, as written there."""
    if not text or offset is None or offset < 0 or words < 1:
        return None
    if offset and _WORD.match(text[offset - 1]):  # not at a word's start
        return None
    tokens = list(_WORD.finditer(text.lower(), offset))[:words]
    if len(tokens) < words or tokens[0].start() != offset:
        return None
    return text[offset : tokens[-1].end()]


def choose_anchors(
    links: pl.DataFrame,
    phrases: Mapping[int, list[str]],
    fallback: Mapping[int, list[str]],
    max_targets: int,
    taken: Mapping[str, set[int]] | None = None,
) -> tuple[list[str], list[int | None]]:
    """One anchor per planned link (source, target, score, and optionally mention_text, mention_offset):
    the phrase the source's own text already uses for the target, where there is one (its character
    offset is returned, so the link can be inserted in place); else the target's best phrase. No anchor
    text points at more than `max_targets` targets, counting the site's existing in-content anchors
    (`taken`: lower-cased anchor -> targets); the target's `fallback` anchors (its whole title, then its
    URL path, which no other page has) are used when every phrase is taken. Links are served most
    probable first."""
    used: dict[str, set[int]] = {k: set(v) for k, v in (taken or {}).items()}

    def free(anchor: str, target: int) -> bool:  # an anchor the site already spreads too wide stays unused
        return len(used.get(anchor.lower(), set()) | {target}) <= max_targets

    order = links.with_row_index("row").sort(["score", "row"], descending=[True, False], nulls_last=True)
    has_mention = "mention_text" in links.columns
    anchors: list[str] = [""] * links.height
    offsets: list[int | None] = [None] * links.height
    for row in order.iter_rows(named=True):
        target = row["target"]
        choice, offset = None, None
        if has_mention and row["mention_text"] and free(row["mention_text"], target):
            choice, offset = row["mention_text"], row["mention_offset"]
        else:
            choice = next((p for p in phrases.get(target, []) if free(p, target)), None)
        if choice is None:
            choice = next((f for f in fallback[target] if free(f, target)), fallback[target][-1])
        used.setdefault(choice.lower(), set()).add(target)
        anchors[row["row"]], offsets[row["row"]] = choice, offset
    return anchors, offsets


def _mentions(pages: pl.DataFrame, planned: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """The planned links (source, target, score) with the phrase the source's text already uses for the
    target, where its candidate found one (mention_text, mention_offset)."""
    texts = pages.select(pl.coalesce("body_text", "meta_description").alias("t"))["t"].to_list()
    mentions = planned.select("source", "target", "score").join(
        candidates.select("source", "target", "mention_offset", "mention_words"),
        on=["source", "target"],
        how="left",
        maintain_order="left",
    )
    return mentions.with_columns(
        pl.Series(
            "mention_text",
            [
                mention_span(texts[s], o, int(w or 0))
                for s, o, w in mentions.select("source", "mention_offset", "mention_words").iter_rows()
            ],
            dtype=pl.String,
        )
    )


def plan_anchors(
    pages: pl.DataFrame,
    planned: pl.DataFrame,
    candidates: pl.DataFrame,
    options: PlanOptions,
    taken: Mapping[str, set[int]],
) -> tuple[list[str], list[int | None]]:
    """Each planned link's anchor and, when the source's text already holds it, its offset there; phrases
    split at the function words of the site's language (told from its titles)."""
    glue = function_words(detect_language(pages["title"].drop_nulls().head(2000).to_list()))
    titles, h1s, paths = pages["title"].to_list(), pages["h1"].to_list(), pages["path"].to_list()
    targets = planned["target"].unique().to_list()
    phrases = {t: anchor_phrases(titles[t], h1s[t], options.anchor_max_words, glue) for t in targets}
    fallback = {
        t: [a for a in (first_clause(titles[t] or h1s[t]), titles[t], paths[t]) if a] for t in targets
    }
    return choose_anchors(
        _mentions(pages, planned, candidates), phrases, fallback, options.anchor_max_targets, taken
    )
