"""A page's text: the field that represents it (embedded, searched), and its body text."""

from __future__ import annotations

from typing import Literal

import polars as pl

from interlink_pipeline.core.urls import url_parts

TextSource = Literal["title", "h1", "meta_description", "title_h1", "title_h1_meta", "custom"]

MAX_TEXT_CHARS = 2000
MAX_BODY_CHARS = 20_000


def with_text(pages: pl.DataFrame, source: TextSource, page_text: pl.DataFrame | None) -> pl.DataFrame:
    """`pages` with whitespace collapsed in h1, meta_description and custom_text, the text (`source`, or
    the next field when it is empty) and where it came from, and the body text: `page_text`'s by URL key,
    else custom_text."""
    pages = pages.with_columns(
        pl.col(c).str.replace_all(r"\s+", " ") for c in ("h1", "meta_description", "custom_text")
    )
    pages = pages.with_columns(_text(source)).join(_body_texts(page_text), on="url_key", how="left")
    return pages.with_columns(
        pl.coalesce("body_text", "custom_text").str.slice(0, MAX_BODY_CHARS).alias("body_text")
    )


def _body_texts(page_text: pl.DataFrame | None) -> pl.DataFrame:
    empty = pl.DataFrame(schema={"url_key": pl.String, "body_text": pl.String})
    if page_text is None or page_text.is_empty():
        return empty
    texts = page_text["text"].str.replace_all(r"\s+", " ").str.strip_chars().replace("", None)
    return (
        pl.DataFrame({"url_key": url_parts(page_text["url"])["url_key"], "body_text": texts})
        .drop_nulls()
        .unique("url_key", keep="first")
    )


def _text(source: TextSource) -> list[pl.Expr]:
    """The text to embed, falling back to the next field when the chosen one is empty."""
    title, h1, meta, custom = (pl.col(c) for c in ("title", "h1", "meta_description", "custom_text"))
    order = {
        "title": [("title", title), ("h1", h1), ("meta_description", meta)],
        "h1": [("h1", h1), ("title", title), ("meta_description", meta)],
        "meta_description": [("meta_description", meta), ("title", title), ("h1", h1)],
        "custom": [("custom", custom), ("title", title), ("h1", h1)],
    }
    if source in order:
        text = pl.coalesce([expr for _, expr in order[source]])
        used = pl.when(order[source][0][1].is_not_null()).then(pl.lit(order[source][0][0]))
        for name, expr in order[source][1:]:
            used = used.when(expr.is_not_null()).then(pl.lit(name))
        used = used.otherwise(None)
    else:
        parts = [title, h1] if source == "title_h1" else [title, h1, meta]
        text = (
            pl.concat_list([p.fill_null("") for p in parts])
            .list.eval(pl.element().filter(pl.element() != ""))
            .list.unique(maintain_order=True)
            .list.join(". ")
            .replace("", None)
        )
        used = pl.when(text.is_not_null()).then(pl.lit(source)).otherwise(None)
    return [text.str.slice(0, MAX_TEXT_CHARS).alias("text"), used.alias("text_source")]
