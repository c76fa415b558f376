"""The words the sample site is made of (words.json): its topics, brands, models, places and templates."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

BRAND = "Alpine Gear"


@dataclass(frozen=True)
class Topic:
    slug: str
    category: str  # the category page's name
    nouns: tuple[tuple[str, str], ...]  # (singular, plural), three per topic
    features: tuple[str, ...]  # six per topic
    activities: tuple[str, ...]  # three per topic


@dataclass(frozen=True)
class UtilityPage:
    path: str
    title: str
    meta: str


_WORDS = json.loads(Path(__file__).with_name("words.json").read_text(encoding="utf-8"))

TOPICS = tuple(
    Topic(
        t["slug"],
        t["category"],
        tuple((singular, plural) for singular, plural in t["nouns"]),
        tuple(t["features"]),
        tuple(t["activities"]),
    )
    for t in _WORDS["topics"]
)
BRANDS: tuple[str, ...] = tuple(_WORDS["brands"])
MODELS: tuple[str, ...] = tuple(_WORDS["models"])
MODEL_SUFFIXES: tuple[str, ...] = tuple(_WORDS["model_suffixes"])
COLOURS: tuple[str, ...] = tuple(_WORDS["colours"])
PLACES: tuple[str, ...] = tuple(_WORDS["places"])
GUIDE_THEMES: tuple[str, ...] = tuple(_WORDS["guide_themes"])
BLOG_TEMPLATES: tuple[str, ...] = tuple(_WORDS["blog_templates"])  # {placeholders} name frame columns
UTILITY_PAGES = tuple(UtilityPage(**page) for page in _WORDS["utility_pages"])
LOCATION_TREE: dict = _WORDS[
    "location_tree"
]  # the homebuilder's states, areas, cities, community words, plans
