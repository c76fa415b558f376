"""The sections a site declares: its navigation menus and its paginated listings.

**Menus**, read from the links export's Link Path (the XPath of each link). A menu item is an `li` element;
an item nested in another item's list (`li/ul/li`, with wrapper `div`s) is its child. The page an item
links to stands for the item, so the menu says which page is the section index of which pages
(`/treatment/` above the conditions it treats) and which pages are the site's main sections (the top level
of a menu that has sub-menus). Editors link a section index to its members and the home page to the main
sections; the menu is how the site declares them when its URLs do not (`/conditions-pregnancy/` sits under
`/treatment/` only in the menu).

Only links outside the body count (header, footer, navigation, sidebar): a nested bullet list in an article
is an outline, not the site's structure.

**Listings**: the first page of a paginated series (a blog index, a category) whose later pages were
crawled. It lists many pages, so it is a section index too (its later pages' links count as its own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

_STEP = re.compile(r"(?:[^/\[]|\[[^\]]*\])+")  # one XPath step, predicates kept whole
_LIST_WRAPPERS = frozenset({"ul", "ol", "div", "nav", "span"})


@dataclass(frozen=True)
class SiteSections:
    """Sections between kept pages (page rows)."""

    parent: np.ndarray  # section index page of each pair (menu parent)
    child: np.ndarray  # its member page (menu child)
    main_sections: np.ndarray  # pages at the top level of a menu with sub-menus
    listings: np.ndarray  # first pages of paginated series

    @classmethod
    def empty(cls) -> SiteSections:
        none = np.empty(0, dtype=np.int64)
        return cls(none, none, none, none)

    @property
    def indexes(self) -> np.ndarray:
        """Pages that list others: menu parents and paginated listings."""
        return np.union1d(self.parent, self.listings)

    def pairs(self) -> pl.DataFrame:
        return pl.DataFrame({"source": self.parent, "target": self.child}, schema={
            "source": pl.Int64, "target": pl.Int64})  # fmt: skip


def _item(path: str) -> tuple[str, str | None, str] | None:
    """(item, parent item or None at the top level, the list holding the item) of a link's XPath, or None
    when the link is not in a list item."""
    steps = _STEP.findall(path)
    names = [s.split("[", 1)[0] for s in steps]
    items = [i for i, name in enumerate(names) if name == "li"]
    if not items:
        return None
    last = items[-1]
    item, holder = "/".join(steps[: last + 1]), "/".join(steps[:last])
    if len(items) > 1:
        between = names[items[-2] + 1 : last]
        if between and set(between) <= _LIST_WRAPPERS and {"ul", "ol"} & set(between):
            return item, "/".join(steps[: items[-2] + 1]), holder
    return item, None, holder


def site_sections(links: pl.DataFrame, row_of_key: dict[str, int]) -> SiteSections:
    """The sections in a frame of followed hyperlinks with `source_url_key` (the source's own URL key),
    `source_key` (its series' first page when it is a later page), `target_key`, `content` (in the body)
    and `link_path`; `row_of_key` maps the kept pages' URL keys to their rows."""
    heads = links.filter(pl.col("source_url_key") != pl.col("source_key"))["source_key"].unique().to_list()
    listings = np.array(sorted(row_of_key[k] for k in heads if k in row_of_key), dtype=np.int64)
    menus = _menus(links, row_of_key)
    return SiteSections(*menus, listings)


def _menus(links: pl.DataFrame, row_of_key: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parent, child, main sections) from the links' paths."""
    none = np.empty(0, dtype=np.int64)
    menu_links = links.filter(~pl.col("content") & pl.col("link_path").is_not_null()).select(
        "link_path", "target_key"
    )
    if menu_links.is_empty():
        return none, none, none
    # the same menu is on every page: each item's page is the target most of its appearances link to
    targets = (
        menu_links.group_by("link_path", "target_key")
        .len()
        .sort(["len", "link_path", "target_key"], descending=[True, False, False])
        .unique("link_path", keep="first", maintain_order=True)
    )
    page_of_item: dict[str, int] = {}
    parent_of_item: dict[str, str | None] = {}
    holder_of_item: dict[str, str] = {}
    for path, key, _ in targets.iter_rows():
        parsed = _item(path)
        row = row_of_key.get(key)
        if parsed is None:
            continue
        item, parent, holder = parsed
        if row is not None and item not in page_of_item:
            page_of_item[item] = row
        parent_of_item.setdefault(item, parent)
        holder_of_item.setdefault(item, holder)
    pairs = {
        (page_of_item[parent], page)
        for item, page in page_of_item.items()
        if (parent := parent_of_item[item]) in page_of_item and page_of_item[parent] != page
    }
    nested_menus = {holder_of_item[parent] for parent in parent_of_item.values() if parent in holder_of_item}
    main = sorted(
        {page for item, page in page_of_item.items() if parent_of_item[item] is None
         and holder_of_item[item] in nested_menus}
    )  # fmt: skip
    ordered = sorted(pairs)
    return (
        np.array([p for p, _ in ordered], dtype=np.int64),
        np.array([c for _, c in ordered], dtype=np.int64),
        np.array(main, dtype=np.int64),
    )
