"""The report's page drill-down: pick a page and see the in-content links into it and out of it today, the
links the plan adds, and its clicks from home and link counts before and after.

The data is one JSON element read by a few lines of script that build the view with DOM text nodes: a
title or URL is never parsed as markup.
"""

from __future__ import annotations

import json

import polars as pl

DRILL_DOWN_PAGES = 25_000  # pages one can pick: those the plan changes most first (the file stays a few MB)
PAGE_FIGURES = (  # page_scorecard columns shown as before → after
    ("clicks from home", "depth_before", "depth_after"),
    ("links in (navigation too)", "inlinks_before", "inlinks_after"),
    ("links out (navigation too)", "outlinks_before", "outlinks_after"),
)


def drilldown_data(pages: pl.DataFrame, links: pl.DataFrame, plan: pl.DataFrame) -> dict:
    """The view's data: `pages` (page_id, url, title and the PAGE_FIGURES columns), the in-content links the
    site has (`links`: source_page_id, target_page_id) and the plan (marts.link_opportunities rows in
    words: report.plan_in_words), with pages as row numbers. Past DRILL_DOWN_PAGES, the pages the plan
    adds most links to or on are kept, and only the links between kept pages are listed (the counts stay
    whole)."""
    touched = pl.concat([plan["source_page_id"], plan["target_page_id"]]).value_counts(name="planned")
    kept = (
        pages.join(touched.rename({"source_page_id": "page_id"}), on="page_id", how="left")
        .with_columns(pl.col("planned").fill_null(0))
        .sort(["planned", "url"], descending=[True, False])
        .head(DRILL_DOWN_PAGES)
        .with_row_index("row")
    )
    row_of = kept.select("page_id", pl.col("row").cast(pl.Int64))

    def as_rows(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(row_of.rename({"page_id": "source_page_id", "row": "s"}), on="source_page_id").join(
            row_of.rename({"page_id": "target_page_id", "row": "t"}), on="target_page_id"
        )

    figures = [column for _, *columns in PAGE_FIGURES for column in columns]
    return {
        "pages": kept.select("url", pl.col("title").fill_null(""), *figures).rows(),
        "now": as_rows(links).select("s", "t").rows(),
        "planned": as_rows(plan)
        .select("s", "t", pl.col("anchor_text").fill_null(""), "why", "probability")
        .rows(),
        "figures": [name for name, *_ in PAGE_FIGURES],
        "shown": kept.height,
        "of": pages.height,
    }


def _json_in_html(data: dict) -> str:
    """JSON that no title can end early: `<`, `>` and `&` as \\u escapes, which JSON reads back."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


SCRIPT = """
(() => {
  const data = JSON.parse(document.getElementById("drilldown-data").textContent);
  const pages = data.pages, byUrl = new Map(pages.map((page, i) => [page[0], i]));
  const linksIn = pages.map(() => []), linksOut = pages.map(() => []);
  for (const [s, t, anchor, why, probability] of data.planned) {
    const planned = `planned: ${why}` + (probability === null ? "" : ` (probability ${probability})`);
    linksOut[s].push([t, anchor, planned]); linksIn[t].push([s, anchor, planned]);
  }
  for (const [s, t] of data.now) { linksOut[s].push([t, "", "now"]); linksIn[t].push([s, "", "now"]); }
  const input = document.getElementById("drilldown-page"), view = document.getElementById("drilldown-view");
  const choices = document.getElementById("drilldown-pages");
  for (const page of pages) {
    const option = document.createElement("option"); option.value = page[0]; choices.append(option);
  }
  const element = (tag, text, className) => {
    const node = document.createElement(tag); if (text !== undefined) node.textContent = text;
    if (className) node.className = className; return node;
  };
  function pageButton(i) {  // the page's title, its URL under it; a click shows that page
    const button = element("button", pages[i][1] || pages[i][0], "page-link"); button.type = "button";
    button.addEventListener("click", () => show(i));
    const cell = element("div"); cell.append(button, element("div", pages[i][0], "url")); return cell;
  }
  function linkTable(caption, links) {
    const table = element("table"); table.createCaption().textContent = `${caption}: ${links.length}`;
    const head = table.createTHead().insertRow();
    for (const name of ["page", "anchor", "link"]) head.append(element("th", name));
    const body = table.createTBody();
    for (const [other, anchor, state] of links) {
      const row = body.insertRow(); row.className = state === "now" ? "now" : "planned";
      row.insertCell().append(pageButton(other));
      for (const text of [anchor, state]) row.insertCell().textContent = text;
    }
    return table;
  }
  function show(i) {
    const page = pages[i];
    input.value = page[0];
    const figures = data.figures.map((name, k) => {
      const before = page[2 + 2 * k], after = page[3 + 2 * k];
      const say = (value) => value === null ? "–" : value;
      return `${name} ${say(before)} → ${say(after)}`;
    });
    view.replaceChildren(
      element("h3", page[1] || page[0]), element("p", page[0], "page-url"), element("p", figures.join(" · ")),
      element("div", undefined, "drilldown-lists"));
    view.lastChild.append(
      linkTable("in-content links in", linksIn[i]), linkTable("in-content links out", linksOut[i]));
  }
  input.addEventListener("change", () => {
    const i = byUrl.get(input.value.trim());
    if (i === undefined) view.replaceChildren(element("p", `No page ${input.value} among the pages listed.`));
    else show(i);
  });
  if (pages.length) show(0);
})();
"""


def drilldown_section(data: dict) -> str:
    """The drill-down's HTML: a page picker, the view, its data and its script (the page the plan changes
    most is shown first)."""
    note = (
        f"<p>The {data['shown']:,} pages the plan adds most links to or on, of {data['of']:,}; links to "
        "other pages are counted, not listed.</p>"
        if data["shown"] < data["of"]
        else ""
    )
    picker = (
        '<label>Page <input id="drilldown-page" list="drilldown-pages" size="80" '
        'placeholder="a page URL"></label><datalist id="drilldown-pages"></datalist>'
    )
    return (
        f'<div id="drilldown">{note}{picker}<div id="drilldown-view"></div></div>'
        f'<script type="application/json" id="drilldown-data">{_json_in_html(data)}</script>'
        f"<script>{SCRIPT}</script>"
    )


STYLE = """
.drilldown-lists { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.drilldown-lists table { align-self: start; }
.drilldown-lists caption { text-align: left; font-weight: 600; padding: .3rem 0; }
.drilldown-lists tr.planned { background: #e3f9e5; } #drilldown-view .page-url { color: #52606d; }
.page-link { background: none; border: none; color: #0b69a3; cursor: pointer; padding: 0; text-align: left;
  font: inherit; } .drilldown-lists .url { color: #7b8794; font-size: .75rem; word-break: break-all; }
"""
