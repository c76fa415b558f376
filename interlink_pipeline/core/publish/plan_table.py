"""The report's plan table, to work from: one line a link — on page, anchor, target, where it goes, the
target's in-links before → after, the confidence band, the probability, the standing decision — every column
sortable and filterable (ITables, i.e. DataTables, with no network); a click on a row opens its expansion
(templates/plan_table.js): the sentence with the anchor marked, why the link is planned (and which pages
could carry it instead), the confidence in words, both pages' titles and URLs. Those fields ride in hidden
columns: the search and the CSV download take them too.
"""

from __future__ import annotations

import warnings

import polars as pl

from interlink_pipeline.core.graph.planner import REASON_WORDS
from interlink_pipeline.core.relevance.confidence import probability_text
from interlink_pipeline.core.warehouse.vocabularies import PLACEMENTS, STRUCTURAL_REASONS

PLAN_TABLE_ROWS = 20_000  # the plan table's rows (the most probable first); the exports hold every link
SHOWN_COLUMNS = {  # plan column -> the table's header, as the row's one line shows it
    "source_path": "on page",
    "anchor_text": "anchor",
    "target_path": "link to",
    "placement_words": "goes",
    "target_inlinks_moved": "target in-links",
    "confidence": "band",
    "probability_percent": "prob. %",
    "status": "status",
}
EXPANSION_COLUMNS = {  # hidden: the row's expansion, searched and downloaded with the rest
    "source_title": "on page title",
    "source_url": "on page URL",
    "target_title": "link to title",
    "target_url": "link to URL",
    "sentence": "sentence",
    "why": "why",
    "confidence_note": "confidence",
}
PLAN_COLUMNS = SHOWN_COLUMNS | EXPANSION_COLUMNS
PLACEMENT_COLUMN = {  # where a link goes, in a few words
    "contextual": "in its sentence",
    "related": "related links",
    "listing": "the page's list",
    "home": "home's sections",
}
# a planned link's standing decision as the plan table and the drill-down say it
STATUS_WORDS = {"accept": "accepted", "reject": "rejected before; planned again: a page was rewritten"}
assert set(PLACEMENT_COLUMN) == set(PLACEMENTS)

# Each row's cells get their whole text as a tooltip (a cut cell reads in full on hover) and the row its
# expansion's fields, unescaped (ITables escapes every cell; DOMParser's document runs nothing it parses).
ROW_CREATED = """function (row, data) {
  const text = (html) => new DOMParser().parseFromString(String(html ?? ""), "text/html").body.textContent;
  for (const cell of row.cells) cell.title = cell.textContent;
  row.dataset.expansion = JSON.stringify(NAMES.map((name, k) => [name, text(data[FIRST + k])]));
  row.classList.add("expandable");
}"""


def plan_in_words(plan: pl.DataFrame) -> pl.DataFrame:
    """Plan rows as people read them: the reason in words (`why`) — a structural link also says whether
    its source is one the site's editors would choose, or weak and which pages could carry it instead —,
    the probability as a percentage, and the editors' standing decision (`status`, from a `decision`
    column when the rows have one); the confidence is the plan's own (`confidence`, `confidence_note`)."""
    words = pl.col("reason").replace_strict(REASON_WORDS)
    weak = (
        words
        + pl.lit("; weak: no page is a likely place for it")
        + pl.when(pl.col("alternative_source_urls").list.len() > 0)
        .then(pl.lit("; it could also go on ") + pl.col("alternative_source_urls").list.join(", "))
        .otherwise(pl.lit(""))
    )
    status = (
        pl.col("decision").replace_strict(STATUS_WORDS, default="to decide")
        if "decision" in plan.columns
        else pl.lit("to decide")
    )
    return plan.with_columns(
        status.alias("status"),
        pl.when(pl.col("weak"))
        .then(weak)
        .when(pl.col("reason").is_in(STRUCTURAL_REASONS))
        .then(words + pl.lit("; the site's editors would link it from here"))
        .otherwise(words)
        .alias("why"),
        probability_text(pl.col("probability")).alias("probability"),
    )


def plan_rows(plan: pl.DataFrame, pages: pl.DataFrame) -> pl.DataFrame:
    """The table's rows: the PLAN_TABLE_ROWS most probable links, PLAN_COLUMNS in words, headed as shown;
    `pages` gives the targets' in-links before and after the plan (page_id, inlinks_before, inlinks_after)."""

    def path(url: str) -> pl.Expr:  # the URL less its scheme and host: the page's name on one line
        return pl.col(url).str.replace(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]*", "")

    inlinks = pages.select(
        pl.col("page_id").alias("target_page_id"),
        pl.col("inlinks_before").fill_null(0).alias("before"),
        pl.col("inlinks_after").fill_null(0).alias("after"),
    )
    most_probable = (
        plan.sort(["probability", "score"], descending=True, nulls_last=True)
        .head(PLAN_TABLE_ROWS)
        .join(inlinks, on="target_page_id", how="left", maintain_order="left")
        .with_columns((pl.col("probability").cast(pl.Float64) * 100).round(1).alias("probability_percent"))
    )  # a number to sort by, never in scientific notation
    rows = plan_in_words(most_probable).with_columns(
        path("source_url").alias("source_path"),
        path("target_url").alias("target_path"),
        pl.col("placement").replace_strict(PLACEMENT_COLUMN, default="").alias("placement_words"),
        (pl.col("before").cast(pl.String) + " → " + pl.col("after").cast(pl.String)).alias(
            "target_inlinks_moved"
        ),
        pl.col("sentence").fill_null(""),
    )
    return rows.select(list(PLAN_COLUMNS)).rename(PLAN_COLUMNS)


def plan_table(plan: pl.DataFrame, pages: pl.DataFrame) -> str:
    """The plan table's HTML (see the module's docstring)."""

    rows = plan_rows(plan, pages)
    first_hidden = len(SHOWN_COLUMNS)
    created = ROW_CREATED.replace("NAMES", repr(list(EXPANSION_COLUMNS.values()))).replace(
        "FIRST", str(first_hidden)
    )
    in_links = list(SHOWN_COLUMNS).index("target_inlinks_moved")
    with warnings.catch_warnings():  # createdRow is DataTables' own option, which ITables does not list
        warnings.filterwarnings("ignore", "These arguments are not documented", SyntaxWarning)
        return _datatable(rows, first_hidden, in_links, created)


def _datatable(rows: pl.DataFrame, first_hidden: int, in_links: int, created: str) -> str:
    import itables

    return itables.to_html_datatable(
        rows,
        table_id="plan",
        connected=False,
        display_logo_when_loading=False,
        show_dtypes=False,
        maxBytes=0,  # every row, not a sample: the table is the plan
        column_filters="footer",  # a search box under each column
        text_in_header_can_be_selected=False,  # a click on a header sorts by it, not only on its arrows
        autoWidth=False,  # the columns' widths are report.css's, the table's layout fixed:
        style="table-layout: fixed; width: 100%; margin: auto; caption-side: bottom",  # one line a row
        columnDefs=[
            {"targets": list(range(first_hidden, len(PLAN_COLUMNS))), "visible": False},
            # "3 → 5" sorts by the in-links before: fewer means the link matters more
            {
                "targets": [in_links],
                "render": itables.JavascriptFunction(
                    "function (data, type) { return type === 'sort' || type === 'type' "
                    "? parseInt(data, 10) : data; }"
                ),
            },
        ],
        createdRow=itables.JavascriptFunction(created),
        buttons=[
            {
                "extend": "csvHtml5",
                "text": "Download CSV (the rows shown)",
                "title": "link_plan",
                "footer": False,
            }
        ],
        layout={
            "topStart": "buttons",
            "topEnd": "search",
            "bottomStart": "info",
            "bottomEnd": "paging",
            "bottom2Start": "pageLength",
        },
        lengthMenu=[25, 100, 1000],
        classes="display compact",
        pageLength=25,
    )
