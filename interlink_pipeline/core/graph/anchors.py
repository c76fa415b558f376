"""Anchors: each planned link's text and where it goes on its source. An in-text link takes the phrase the
source's own text already uses for the target, in a sentence an editor can link as it stands; every other
link goes in the page's related-links block (or the home page's sections, or an index's list) under the
target's name. An anchor is never a generic word or phrase, a URL path, or a phrase inside code, a table
row or a heading; no anchor text points at more than anchor_max_targets pages across the site."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import polars as pl

from interlink_pipeline.core.frames import looked_up
from interlink_pipeline.core.graph.mention_sense import MentionSense
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.graph.sentences import first_placed, heading_lead
from interlink_pipeline.core.relevance.phrases import DEMONSTRATIVES, GENERIC_ANCHORS, INDEFINITES
from interlink_pipeline.core.text import (
    first_clause,
    function_words,
    page_name,
    stop_words,
)

_WORD = re.compile(r"\w+", re.UNICODE)
# a slash past a name's first character: a path ("/methods/page/prev/", "a/b"); one before a single word is
# a command-line option's name ("/ALL", "/PGD")
_URL_LIKE = re.compile(
    r"(?<=.)[/\\]|^[/\\]+$|^(https?:|www\.)|\w\.(html?|php|aspx?|md|m?js|cjs|ts|css|json|ya?ml|toml|xml|txt)$",
    re.I | re.S,
)
_URL_START = re.compile(r"(https?:|www\.)", re.I)
SPREAD_TARGETS = 3  # an existing anchor pointing at this many pages or more names none of them
COMMON_SHARE = 0.05  # a single word on this share of the site's pages (and 3 or more) names nothing
FULL_TEXT_WORDS = 200  # ... when their texts are this long; shorter texts, a proportionally smaller share


def url_like(text: str) -> bool:
    """A URL, a path or a file name (`/methods/page/prev/`, `postcss.config.mjs`), not a name (a slash in
    words is one: "/DELAYLOAD (Delay Load Import)", "input/output streams"; an option's is: "/ALL")."""
    text = text.strip()
    return bool(_URL_LIKE.search(text)) and not (" " in text and not _URL_START.match(text))


@dataclass(frozen=True)
class AnchorRules:
    """What an anchor may not be: a generic phrase (the list, or only function words), a phrase the site's
    own links give three or more pages, a single word most of the site's pages use or a stop word of its
    language ("else", "width": in running text, the ordinary word), or a URL path."""

    glue: frozenset[str]
    spread: frozenset[str] = frozenset()  # existing anchors (lower case) that point at many pages
    common: frozenset[str] = frozenset()  # single words on many of the site's pages, stop words (lower case)

    def refusal(self, anchor: str | None) -> str | None:
        """Why `anchor` names nothing ('generic', 'URL path'), or None when it may be used."""
        text = (anchor or "").strip()
        if not text:
            return "empty"
        if url_like(text):
            return "URL path"
        lowered = " ".join(_WORD.findall(text.lower()))
        tokens = lowered.split()
        if (
            lowered in GENERIC_ANCHORS
            or (bool(tokens) and tokens[0] in DEMONSTRATIVES)
            or text.split()[0] in INDEFINITES
            or not any(len(t) > 2 and not t.isdigit() for t in tokens)
            or all(t in self.glue for t in tokens)
            or lowered in self.spread
            or (len(tokens) == 1 and lowered in self.common)
        ):
            return "generic"
        return None


def anchor_rules(
    pages: pl.DataFrame,
    taken: Mapping[str, set[int]],
    glue: frozenset[str],
    ordinary: frozenset[str] = frozenset(),
) -> AnchorRules:
    """The site's anchor rules: its existing anchors that point at many pages, and the single words on
    COMMON_SHARE of its pages' texts or `ordinary` (its language's stop words)."""
    spread = frozenset(" ".join(_WORD.findall(a)) for a, t in taken.items() if len(t) >= SPREAD_TARGETS)
    texts = pages.select(pl.coalesce("body_text", "meta_description").fill_null("").alias("t"))
    counts = (
        texts.select(pl.col("t").str.to_lowercase().str.extract_all(r"\w+").list.unique().alias("w"))
        .explode("w")
        .group_by("w")
        .len()
    )
    # short texts (meta descriptions only) hold a word on fewer pages for the same frequency: the floor
    # scales with their length up to FULL_TEXT_WORDS
    words = texts.select(pl.col("t").str.count_matches(r"\w+").mean()).item() or 0.0
    floor = max(3, COMMON_SHARE * pages.height * min(1.0, words / FULL_TEXT_WORDS))
    common = frozenset(counts.filter(pl.col("len") >= floor)["w"].drop_nulls().to_list())
    return AnchorRules(glue, spread, common | ordinary)


def target_names(
    title: str | None,
    h1: str | None,
    parent: str | None,
    path: str | None = None,
    shared: frozenset[str] = frozenset(),
    rules: AnchorRules | None = None,
) -> list[str]:
    """A target's names, best first: its name's and its title's own words (text.page_name; unless other
    pages' begin the same: `shared`, lower case, as 'Expert Tips: …'), the whole H1 (unless it is the
    title's tail) and title (without either, its URL's last part in words), then the first of them with its
    parent's name (two pages called 'Overview' in two sections, and the only name of a page called by a word
    the site uses everywhere, 'File (Page methods)'); never a URL, and no name the `rules` refuse while
    another is left."""
    name = page_name(title, h1)
    heading = (h1 or "").strip() if name == first_clause(h1) else ""  # no H1 that is its title's tail
    clauses = [c for c in (name, first_clause(title)) if c.lower() not in shared]
    names = [*clauses, heading, (title or "").strip()]
    names = [n for n in dict.fromkeys(names) if n and not url_like(n)]
    if not names and path:  # no title at all: its URL's last part, in words
        last = [s for s in path.split("?")[0].split("/") if s]
        names = [re.sub(r"[-_]+", " ", last[-1]).strip().capitalize()] if last else []
    names = [n for n in names if n.lower() not in shared] or names  # "documentation tag", on 40 pages
    if names and parent and parent.lower() != names[0].lower():
        names.append(f"{names[0]} ({parent})")
    if rules is not None:
        names = [n for n in names if rules.refusal(n) is None] or names
    return names


class Anchored(NamedTuple):
    """Each planned link's anchor, its offset in the source's text and the sentence there (None for a link
    not placed in the text), and its placement."""

    anchors: list[str]
    offsets: list[int | None]
    sentences: list[str | None]
    placements: list[str]


def choose_anchors(
    links: pl.DataFrame,
    names: Mapping[int, list[str]],
    rules: AnchorRules,
    max_targets: int,
    taken: Mapping[str, set[int]] | None = None,
) -> Anchored:
    """One anchor per planned link (source, target, score, placement, and optionally mention_text,
    mention_offset, sentence), most probable first. An in-content link takes the phrase the source's text
    already uses for the target, where it passes the `rules` and points at no more than `max_targets` pages
    (the site's existing in-content anchors, `taken`, counted); else it goes in the page's related-links
    block ('related') under the target's first free name. Home and listing links take the target's name."""
    used: dict[str, set[int]] = {k: set(v) for k, v in (taken or {}).items()}

    def free(anchor: str, target: int) -> bool:
        return len(used.get(anchor.lower(), set()) | {target}) <= max_targets

    order = links.with_row_index("row").sort(["score", "row"], descending=[True, False], nulls_last=True)
    has_mention = "mention_text" in links.columns
    result = Anchored([""] * links.height, [None] * links.height, [None] * links.height, [""] * links.height)
    for row in order.iter_rows(named=True):
        target, placement = row["target"], row["placement"]
        mention = row["mention_text"] if has_mention else None
        if placement == "contextual" and mention and rules.refusal(mention) is None and free(mention, target):
            choice = mention
            result.offsets[row["row"]], result.sentences[row["row"]] = row["mention_offset"], row["sentence"]
        else:
            own = names[target]
            choice = next((n for n in own if free(n, target)), own[0] if own else "")
            placement = "related" if placement == "contextual" else placement
        used.setdefault(choice.lower(), set()).add(target)
        result.anchors[row["row"]], result.placements[row["row"]] = choice, placement
    return result


def texts_and_leads(pages: pl.DataFrame) -> tuple[list[str | None], list[int]]:
    """Each page's text an anchor is placed in (its body, else its meta description) and how many of its
    first characters are the page's own heading (sentences.heading_lead), where no anchor goes."""
    texts = pages.select(pl.coalesce("body_text", "meta_description").alias("t"))["t"].to_list()
    leads = [
        heading_lead(text, [h1, first_clause(title), title])
        for text, h1, title in zip(texts, pages["h1"].to_list(), pages["title"].to_list(), strict=True)
    ]
    return texts, leads


def placed_mentions(
    pages: pl.DataFrame,
    planned: pl.DataFrame,
    candidates: pl.DataFrame,
    sense: MentionSense,
    nearest: int | None,
) -> pl.DataFrame:
    """The planned links (source, target, score, placement) with the phrase the source's text already uses
    for the target where its candidate found one that can be linked in place and that means the target
    (`sense`, the sentence judged by its `nearest` pages, or not at all with None): mention_text,
    mention_offset, sentence."""
    texts, leads = texts_and_leads(pages)
    mentions = looked_up(
        planned.select("source", "target", "score", "placement"),
        candidates.select("source", "target", "mention_offset", "mention_words"),
        ["source", "target"],
    )
    placed = [
        first_placed(texts[s], o, int(w or 0), leads[s])
        for s, o, w in mentions.select("source", "mention_offset", "mention_words").iter_rows()
    ]
    found = [i for i, m in enumerate(placed) if m is not None]
    pairs = mentions.select("source", "target").rows()
    meant = sense.means(
        [placed[i].text for i in found],
        [placed[i].sentence for i in found],
        [pairs[i][0] for i in found],
        [pairs[i][1] for i in found],
        nearest,
    )
    for i, yes in zip(found, meant, strict=True):
        placed[i] = placed[i] if yes else None
    return mentions.with_columns(
        pl.Series("mention_text", [m.text if m else None for m in placed], dtype=pl.String),
        pl.Series("mention_offset", [m.offset if m else None for m in placed], dtype=pl.Int64),
        pl.Series("sentence", [m.sentence if m else None for m in placed], dtype=pl.String),
    )


def site_anchor_rules(pages: pl.DataFrame, taken: Mapping[str, set[int]], language: str) -> AnchorRules:
    """The anchor rules of a site in its `language`."""
    return anchor_rules(pages, taken, function_words(language), stop_words(language))


def plan_anchors(
    pages: pl.DataFrame,
    planned: pl.DataFrame,
    candidates: pl.DataFrame,
    options: PlanOptions,
    taken: Mapping[str, set[int]],
    parents: list[int],
    rules: AnchorRules,
    sense: MentionSense,
) -> Anchored:
    """Each planned link's anchor, its place in the source's text (when the text holds it) and its
    placement; `parents`: each page's parent in the URL tree (-1: none)."""
    titles, h1s, paths = pages["title"].to_list(), pages["h1"].to_list(), pages["path"].to_list()
    clauses = pl.Series([page_name(t, h).lower() for t, h in zip(titles, h1s, strict=True)], dtype=pl.String)
    shared = frozenset(clauses.filter(clauses.is_duplicated()).to_list())
    names = {}
    for t in planned["target"].unique().to_list():
        parent = parents[t]
        parent_name = page_name(titles[parent], h1s[parent]) if parent >= 0 else None
        names[t] = target_names(titles[t], h1s[t], parent_name, paths[t], shared, rules)
    return choose_anchors(
        placed_mentions(pages, planned, candidates, sense, options.sentence_pages),
        names,
        rules,
        options.anchor_max_targets,
        taken,
    )
