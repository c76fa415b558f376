"""An editor's review of a plan: the figures an editor reading it sees, and a blind sample to judge.

- `sense`: per set, from the plan a `bench_link_quality` run left in benchmarks/.data/quality/<set>/ (or any
  warehouse, `--warehouse PATH --site HOST`): generic anchors, URL-path anchors, anchors in code, tables or
  across a sentence's end, the largest share of the plan's links into one page, new links into the weakest
  and the strongest quarter of pages (by in-links before), tasks with neither a sentence nor a concrete
  placement, hub links into pages that are not sections, rescues sourced from utility pages, links the
  source already has in its navigation, anchors inside a longer name, topical links to a page of a shared
  name outside the source's branch, structural links without evidence (over the candidates the plan could
  use) and the pages left for an editor. Generic is judged by a fixed list (the issue's words and the
  usual "here", "read more") and by the site's own statistics, with the plan's rules.
- `sample`: a seeded random sample of the plan written for a reviewer (CSV): the source page, the sentence
  with the anchor in [[brackets]] or the placement, the target's title and URL — nothing of the reason or
  the probability — and empty `verdict` (yes / edit / no) and `why` columns.
  With `--editors N`, N of the links the site's editors wrote in its pages' content are shuffled in, in the
  same form, and which row is whose goes to a key file beside the sample (`<name>.key.csv`, not for the
  reviewer): the share of the editors' own links a reviewer refuses is the floor to read the plan's against.
  With `--about CHARS`, each page's opening (its meta description, then its text, from the set's own
  export even where the plan was made without it) sits beside its title: what the site's editor knows of
  the two pages, which a title alone does not say (who a person is, what a program does).
  With `--apart-from FILE…`, the links earlier review files hold are not drawn again: two samples of a
  small plan judge distinct links (hugodocs publishes 69; two 30-link draws shared 15).
- `score`: the counts of a filled sample (the plan's and the editors' apart where a key file is beside it).
- `striking`: what a Search Console export does to a plan: a seeded export is made for the set's pages
  (positions uniform over 1–40, impressions log-normal), and the plan is made again on a copy of the set's
  warehouse without it and with it; the table holds the new in-links into the pages in striking distance
  and the internal PageRank share they hold, before → after.

    python -m benchmarks.bench_editor_review sense --sets hugodocs sample
    python -m benchmarks.bench_editor_review sample --set hugodocs --links 30 --seed 0 --out review.csv
    python -m benchmarks.bench_editor_review sample --set hugodocs --links 30 --editors 30 --out review.csv
    python -m benchmarks.bench_editor_review sample --set cpwiki-no-text --links 30 --editors 10 --about 240 \
        --out review.csv
    python -m benchmarks.bench_editor_review sample --set hugodocs --links 30 --editors 10 --about 240 \
        --seed 76 --apart-from benchmarks/reviews/hugodocs-69g.csv benchmarks/reviews/hugodocs-69h.csv \
        --out review.csv
    python -m benchmarks.bench_editor_review score benchmarks/reviews/*.csv
    python -m benchmarks.bench_editor_review striking --sets hugodocs sample --seed 0
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.harness import DATA, print_table
from interlink_pipeline.core.graph.anchors import texts_and_leads, url_like
from interlink_pipeline.core.graph.link_evidence import related, with_shares
from interlink_pipeline.core.graph.plan_options import UTILITY_PAGES, PlanOptions, pages_matching
from interlink_pipeline.core.graph.planner import SECTION_PAGES
from interlink_pipeline.core.graph.sentences import (
    anchor_at,
    inside_longer_name,
    placed_mention,
    sentence_bounds,
)
from interlink_pipeline.core.publish.page_drilldown import PLACEMENT_WORDS
from interlink_pipeline.core.relevance.phrases import GENERIC_ANCHORS
from interlink_pipeline.core.relevance.url_tree import UrlTree
from interlink_pipeline.core.warehouse.contract import empty_frame
from interlink_pipeline.core.warehouse.store import read_site
from interlink_pipeline.core.warehouse.vocabularies import STRUCTURAL_REASONS

# the sets a bench_link_quality run leaves, by the name of their folder, and their site
SITES = {
    "hugodocs": "gohugo.io",
    "hugodocs-no-text": "gohugo.io",
    "hugodocs-no-links": "gohugo.io",
    "cppdocs": "learn.microsoft.com",
    "cppdocs-no-text": "learn.microsoft.com",
    "cppdocs-no-links": "learn.microsoft.com",
    "cpwiki": "www.chessprogramming.org",
    "cpwiki-no-text": "www.chessprogramming.org",
    "cpwiki-no-links": "www.chessprogramming.org",
    "sample": "www.alpinegear.example",
    "location-tree": "www.loneoakhomes.example",
    "location-tree-no-links": "www.loneoakhomes.example",
    "lightchiropractic": "www.lightchiropractic.sg",
}
# generic whatever the site: the plan's list and the words an editor's review refused on the docs sets
EDITOR_GENERIC = GENERIC_ANCHORS | {"function", "string", "date", "and", "colors", "file"}
VERDICTS = ("yes", "edit", "no")


def _plan_frames(warehouse: str, site: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    plan = read_site(warehouse, "graph.link_plan", site)
    pages = read_site(
        warehouse, "staging.pages", site, ["page_id", "url", "path", "title", "h1", "body_text",
                                          "meta_description", "is_home"],
    )  # fmt: skip
    metrics = read_site(warehouse, "graph.page_metrics", site)
    return plan, pages, metrics


def with_usable_candidates(plan: pl.DataFrame, warehouse: str, site: str) -> pl.DataFrame:
    """`plan` with each pair's candidate among those the plan could use (probability, origins, share,
    rivals): the stored candidates less those sensible_candidates refuses, as the plan itself judged them —
    a target's share is of its usable candidates, not of every one ml.link_candidates holds; and
    `outside_branch`: whether its target is a page of a shared name outside the source's branch
    (same_name.outside_branch, over the plan's own name groups)."""
    from interlink_pipeline.core.graph.link_plan import CANDIDATE_COLUMNS
    from interlink_pipeline.core.graph.plan_inputs import indexed, read_plan_inputs
    from interlink_pipeline.core.graph.same_name import outside_branch
    from interlink_pipeline.core.graph.sensible_candidates import sensible_candidates
    from interlink_pipeline.core.warehouse.site_tables import SiteTables
    from interlink_pipeline.defs.ml.embeddings import default_embedder

    tables = SiteTables()
    tables.path, tables.lock_timeout_s, tables.snapshot_path = warehouse, 10.0, ""
    inputs = read_plan_inputs(tables, site, default_embedder().for_site(str(warehouse), site))
    stored = indexed(
        read_site(warehouse, "ml.link_candidates", site, CANDIDATE_COLUMNS),
        inputs.index,
        {"source_page_id": "source", "target_page_id": "target"},
    )
    usable = sensible_candidates(
        inputs.pages, inputs.tree, inputs.name_groups, inputs.cluster_of, stored, inputs.existing,
        PlanOptions(), inputs.sense, inputs.links_known == "links",
    )  # fmt: skip
    ids = inputs.pages["page_id"].to_numpy()
    pairs = indexed(  # a join: back in the plan's order by its row
        plan.select("source_page_id", "target_page_id").with_row_index("row"),
        inputs.index,
        {"source_page_id": "source", "target_page_id": "target"},
    ).sort("row")
    far = outside_branch(
        inputs.tree, inputs.name_groups, pairs["source"].to_numpy(), pairs["target"].to_numpy()
    )
    plan = plan.with_columns(pl.Series("outside_branch", far, dtype=pl.Boolean))
    shares = with_shares(usable.rename({"probability": "score"}))
    shares = shares.select(
        pl.Series("source_page_id", ids[shares["source"].to_numpy()], dtype=pl.String),
        pl.Series("target_page_id", ids[shares["target"].to_numpy()], dtype=pl.String),
        pl.col("score").alias("probability"),
        "origins",
        "share",
        "rivals",
    )
    return plan.drop("probability").join(
        shares, on=["source_page_id", "target_page_id"], how="left", maintain_order="left"
    )


def without_evidence(plan: pl.DataFrame, pages: pl.DataFrame) -> int:
    """The plan's structural links without evidence their pages are about the same thing, by the plan's
    own rule (link_evidence.related) over the pair's candidate now: a rescue, shortcut or bridge neither in
    the target's own section index nor the index above it, nor from a related candidate at min_probability
    or more. The plan's `evidence` names the index; old plans named none ("semantic")."""
    ids = pages["page_id"].to_list()
    parents = UrlTree(pages["path"].to_list()).parent.tolist()
    parent_of = dict(zip(ids, [ids[p] if p >= 0 else None for p in parents], strict=True))
    structural = plan.filter(pl.col("reason").is_in(list(STRUCTURAL_REASONS))).with_columns(
        (pl.col("target_page_id").replace_strict(parent_of, default=None) == pl.col("source_page_id"))
        .fill_null(False)
        .alias("source_is_parent")
    )
    return structural.filter(~related(PlanOptions().min_probability)).height


def editor_sense(plan: pl.DataFrame, pages: pl.DataFrame, metrics: pl.DataFrame) -> dict:
    """The figures an editor reading the plan sees (see the module's docstring)."""
    links = plan.height
    anchors = plan["anchor_text"].fill_null("")
    lowered = anchors.str.to_lowercase().str.strip_chars()
    generic = int(lowered.is_in(list(EDITOR_GENERIC)).sum())
    url_path = sum(url_like(a) for a in anchors.to_list())
    texts, leads = (dict(zip(pages["page_id"], found, strict=True)) for found in texts_and_leads(pages))
    in_text = plan.filter(pl.col("anchor_offset").is_not_null())
    placed = in_text.select("source_page_id", "anchor_offset", "anchor_text").rows()
    misplaced = sum(
        placed_mention(texts.get(source), offset, len(re.findall(r"\w+", anchor)), leads.get(source, 0))
        is None
        for source, offset, anchor in placed
    )
    in_longer_name = sum(
        _in_longer_name(texts.get(source) or "", offset, anchor, leads.get(source, 0))
        for source, offset, anchor in placed
    )
    shares = plan.group_by("target_page_id").len().sort("len", descending=True)
    before = metrics.select("page_id", "inlinks_before").sort("inlinks_before", "page_id")
    quarter = max(1, before.height // 4)
    weakest = set(before.head(quarter)["page_id"].to_list())
    strongest = set(before.tail(quarter)["page_id"].to_list())
    targets = plan["target_page_id"].to_list()
    no_task = plan.filter(pl.col("anchor_offset").is_null() & (pl.col("placement") == "contextual")).height
    tree = UrlTree(pages["path"].to_list())
    below = dict(zip(pages["page_id"].to_list(), tree.descendants.tolist(), strict=True))
    floor = max(SECTION_PAGES, pages.height // 100)
    hubs = plan.filter(pl.col("reason") == "hub")["target_page_id"].to_list()
    utility = set(pages.filter(pl.Series(pages_matching(pages["path"], UTILITY_PAGES)))["page_id"].to_list())
    rescues = plan.filter(pl.col("reason") == "orphan-rescue")
    from_utility = rescues["source_page_id"].is_in(list(utility)).sum()
    return {
        "links": links,
        "generic anchors": _share(generic, links),
        "URL-path anchors": _share(url_path, links),
        "anchors in code, tables or across sentences": _share(misplaced, links),
        "anchors inside a longer name": _share(in_longer_name, links),
        "topical links to a same-name page outside the source's branch": _share(
            plan.filter(pl.col("outside_branch") & (pl.col("reason") == "topical")).height, links
        )
        if "outside_branch" in plan.columns
        else "–",
        "largest share into one page": f"{shares['len'][0] / links:.1%}" if links else "–",
        "new links into the weakest / strongest quarter": f"{sum(t in weakest for t in targets)} / "
        f"{sum(t in strongest for t in targets)}",
        "in the text / related links / other": f"{in_text.height} / "
        f"{plan.filter(pl.col('placement') == 'related').height} / "
        f"{plan.filter(pl.col('placement').is_in(['home', 'listing'])).height}",
        "tasks without a sentence or placement": no_task,
        "hub links into non-sections": f"{sum(below.get(h, 0) < floor for h in hubs)} of {len(hubs)}",
        "rescues from utility pages": f"{from_utility} of {rescues.height}",
        "already in navigation": int(plan["in_navigation"].sum()) if "in_navigation" in plan.columns else "–",
        "structural links without evidence": _share(without_evidence(plan, pages), links),
        "pages left for an editor (orphan / too deep or cut off / near-duplicate)": _left_for_editor(metrics),
    }


def _in_longer_name(text: str, offset: int, anchor: str, lead: int) -> bool:
    """Whether an anchor placed at `offset` is part of a longer name in its sentence (the plan's own test,
    sentences.inside_longer_name): "York" of "New York City Subway"."""
    end = offset + len(anchor)
    if text[offset:end].lower() != anchor.lower():
        return False  # not where the plan says: counted with the misplaced anchors
    begin, _ = sentence_bounds(text, offset, end, lead)
    return inside_longer_name(text, offset, end, begin)


def _left_for_editor(metrics: pl.DataFrame) -> str:
    if "left_for_editor" not in metrics.columns:
        return "not said"
    problem = metrics["left_for_editor"].drop_nulls().str.split(":").list.first()
    orphans, twins = int((problem == "orphan").sum()), int((problem == "near-duplicate").sum())
    return f"{orphans} / {problem.len() - orphans - twins} / {twins}"


def _share(count: int, total: int) -> str:
    return f"{count} ({count / total:.1%})" if total else "0"


def sense(sets: list[str], warehouse: str | None, site: str | None) -> None:
    rows = []
    places = [(warehouse, site, site)] if warehouse else [
        (str(DATA / "quality" / name / "warehouse.duckdb"), SITES[name], name) for name in sets
    ]  # fmt: skip
    for path, host, name in places:
        if not Path(path).is_file():
            print(
                f"{name}: no warehouse at {path}; run bench_link_quality --sets {name} first", file=sys.stderr
            )
            continue
        plan, pages, metrics = _plan_frames(path, host)
        rows.append({"set": name, **editor_sense(with_usable_candidates(plan, path, host), pages, metrics)})
    _table("What an editor reading the plan sees", rows)


def page_openings(set_name: str | None, warehouse: str, site: str, chars: int) -> dict[str, str]:
    """Each page's URL -> the first `chars` characters of its text, cut at a word: what a site's editor
    knows of the pages a link joins and the titles alone do not say (who a person is, what a program
    does): its meta description, then its text, from the set's own text export where it has one (a plan
    made without page text is judged by an editor who knows the pages all the same), else the
    warehouse's."""
    from urllib.parse import unquote

    from benchmarks.bench_link_quality import SETS, _folder

    _, pages, _ = _plan_frames(warehouse, site)
    texts = {unquote(url): text for url, text in pages.select("url", "body_text").iter_rows() if text}
    base = (set_name or "").removesuffix("-no-text").removesuffix("-no-links")
    export = SETS.get(base, (None, None, None))[2]
    if export:
        exported = pl.read_csv(_folder(base) / export, infer_schema=False)
        texts |= {unquote(url): text for url, text in exported.select("Address", "Text").iter_rows() if text}

    def opening(description: str | None, text: str) -> str:
        description, text = " ".join((description or "").split()), " ".join(text.split())
        if description and not text.startswith(description[:40]):
            text = f"{description} {text}"
        return text if len(text) <= chars else text[: chars + 1].rsplit(" ", 1)[0] + " …"

    return {
        url: opening(description, texts.get(unquote(url), ""))
        for url, description in pages.select("url", "meta_description").iter_rows()
    }


def with_openings(rows: pl.DataFrame, openings: dict[str, str]) -> pl.DataFrame:
    """A review sample with what each of its pages is about (page_openings) beside its title."""
    about = {end: rows[f"{end}_url"].replace_strict(openings, default="") for end in ("source", "target")}
    return rows.with_columns(
        about["source"].alias("source_about"), about["target"].alias("target_about")
    ).select(*(["row"] if "row" in rows.columns else []), "source_title", "source_url", "source_about",
             "link", "target_title", "target_url", "target_about", "verdict", "why")  # fmt: skip


def judged_pairs(files: list[str]) -> pl.DataFrame | None:
    """The (source_url, target_url) pairs earlier review files hold: a new sample leaves them out, so that
    two samples of a small plan judge distinct links."""
    frames = [pl.read_csv(f, columns=["source_url", "target_url"], infer_schema=False) for f in files]
    return pl.concat(frames).unique() if frames else None


def shown_titles(pages: pl.DataFrame) -> pl.Series:
    """Each page's title as its reader sees it: its H1, else its title — its title where the H1 is only the
    title's tail (text.page_name: "functions" on "<cuchar> functions")."""
    from interlink_pipeline.core.text import first_clause, page_name

    return pl.Series(
        "title",
        [
            (h1 if page_name(title, h1) == first_clause(h1) else title) or title
            for title, h1 in pages.select("title", "h1").iter_rows()
        ],
        dtype=pl.String,
    )


def review_sample(
    warehouse: str, site: str, links: int, seed: int, judged: pl.DataFrame | None = None
) -> pl.DataFrame:
    """A seeded random sample of the plan, as a reviewer reads it: no reason, no probability; none of the
    `judged` pairs."""
    plan, pages, _ = _plan_frames(warehouse, site)
    titles = pages.select("page_id", shown_titles(pages))
    if judged is not None:
        plan = plan.join(judged, on=["source_url", "target_url"], how="anti")
    picked = plan.sample(min(links, plan.height), seed=seed, shuffle=True)
    rows = []
    for row in (
        picked.join(
            titles.rename({"page_id": "source_page_id", "title": "source_title"}),
            on="source_page_id",
            how="left",
        )
        .join(
            titles.rename({"page_id": "target_page_id", "title": "target_title"}),
            on="target_page_id",
            how="left",
        )
        .iter_rows(named=True)
    ):
        sentence = row.get("sentence")
        at = anchor_at(sentence, row["anchor_text"]) if row["anchor_offset"] is not None and sentence else -1
        if at >= 0:
            placed = (
                sentence[:at] + "[[" + row["anchor_text"] + "]]" + sentence[at + len(row["anchor_text"]) :]
            )
        else:
            placed = (
                f"{PLACEMENT_WORDS.get(row['placement'], 'place it in the text')}: [[{row['anchor_text']}]]"
            )
        rows.append(
            {
                "source_title": row["source_title"], "source_url": row["source_url"], "link": placed,
                "target_title": row["target_title"], "target_url": row["target_url"],
                "verdict": "", "why": "",
            }
        )  # fmt: skip
    return pl.DataFrame(rows)


def editors_sample(
    warehouse: str, site: str, links: int, seed: int, judged: pl.DataFrame | None = None
) -> pl.DataFrame:
    """A seeded sample of the links the site's editors wrote in its pages' content, in the review's form
    (the anchor in its sentence where the source's text holds it): what the reviewer refuses of these is
    the floor the plan's refusals are read against; none of the `judged` pairs."""
    from interlink_pipeline.core.graph.sentences import sentence_bounds
    from interlink_pipeline.core.publish.warehouse_reads import content_links

    pairs = content_links(warehouse, site, lock_timeout_s=10.0)
    _, pages, _ = _plan_frames(warehouse, site)
    pages = pages.select("page_id", "url", shown_titles(pages), "body_text")
    picked = (
        pairs.join(pages.rename(lambda c: f"source_{c}" if c != "page_id" else "source_page_id"),
                   on="source_page_id")
        .join(pages.drop("body_text").rename(lambda c: f"target_{c}" if c != "page_id" else "target_page_id"),
              on="target_page_id")
        .sort("source_page_id", "target_page_id")
    )  # fmt: skip
    if judged is not None:
        picked = picked.join(judged, on=["source_url", "target_url"], how="anti", maintain_order="left")
    picked = picked.sample(min(links, picked.height), seed=seed)
    rows = []
    for row in picked.iter_rows(named=True):
        anchor, text = (row["anchor"] or row["target_title"] or "").strip(), row["source_body_text"] or ""
        found = re.search(rf"(?<!\w){re.escape(anchor)}(?!\w)", text, re.IGNORECASE) if anchor else None
        if found:
            begin, end = sentence_bounds(text, found.start(), found.end())
            link = f"{text[begin : found.start()]}[[{found.group()}]]{text[found.end() : end]}".strip()
        else:
            link = f"place it in the text: [[{anchor}]]"
        rows.append(
            {
                "source_title": row["source_title"], "source_url": row["source_url"], "link": link,
                "target_title": row["target_title"], "target_url": row["target_url"],
                "verdict": "", "why": "",
            }
        )  # fmt: skip
    return pl.DataFrame(rows)


def blind_mix(
    plan_rows: pl.DataFrame, editors_rows: pl.DataFrame, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The plan's and the editors' rows shuffled into one sample, and the key (row, origin) kept apart."""
    mixed = pl.concat(
        [plan_rows.with_columns(pl.lit("plan").alias("origin")),
         editors_rows.with_columns(pl.lit("editors").alias("origin"))]
    ).sample(fraction=1.0, shuffle=True, seed=seed).with_row_index("row", offset=1)  # fmt: skip
    return mixed.drop("origin"), mixed.select("row", "origin")


def key_file(sample: Path) -> Path:
    return sample.with_name(sample.stem + ".key.csv")


def score(files: list[str]) -> None:
    rows = []
    for file in (f for f in files if not f.endswith(".key.csv")):
        filled = pl.read_csv(file, infer_schema=False)
        key = key_file(Path(file))
        origins = (
            pl.read_csv(key, infer_schema=False)["origin"] if key.is_file()
            else pl.Series(["plan"] * filled.height)
        )  # fmt: skip
        verdicts = filled["verdict"].fill_null("").str.strip_chars().str.to_lowercase()
        for origin in origins.unique(maintain_order=True).to_list():
            mine = verdicts.filter(origins == origin)
            counts = {v: int((mine == v).sum()) for v in VERDICTS}
            judged = sum(counts.values())
            rows.append(
                {
                    "file": Path(file).name, "links of": origin, "links": mine.len(), **counts,
                    "unjudged": mine.len() - judged,
                    "yes share": f"{counts['yes'] / judged:.0%}" if judged else "–",
                    "no share": f"{counts['no'] / judged:.0%}" if judged else "–",
                }
            )  # fmt: skip
    _table("Reviewed samples (verdicts: yes publish as given, edit, no)", rows)


def _table(title: str, rows: list[dict]) -> None:
    if rows:
        print_table(title, [list(r.values()) for r in rows], list(rows[0]))


def striking(sets: list[str], seed: int) -> None:
    """New in-links into the pages in striking distance, without and with a seeded Search Console export."""
    from interlink_pipeline.core.graph.link_plan import plan_for_site, striking_distance
    from interlink_pipeline.core.graph.plan_metrics import equity_moved
    from interlink_pipeline.core.graph.plan_options import PlanOptions
    from interlink_pipeline.core.warehouse.site_tables import SiteTables
    from interlink_pipeline.defs.ml.embeddings import default_embedder

    rows = []
    for name in sets:
        folder = Path(tempfile.mkdtemp())
        shutil.copyfile(DATA / "quality" / name / "warehouse.duckdb", folder / "warehouse.duckdb")
        tables = SiteTables()
        tables.path, tables.lock_timeout_s, tables.snapshot_path = str(folder / "warehouse.duckdb"), 10.0, ""
        options = PlanOptions(keep_previous=False)
        pages = read_site(tables.path, "staging.pages", SITES[name], ["url", "url_key"])
        rng = np.random.default_rng(seed)
        console = pl.DataFrame(
            {
                "url": pages["url"],
                "impressions": rng.lognormal(5, 1.5, pages.height).astype(np.int64),
                "position": rng.uniform(1, 40, pages.height).round(1),
            }
        )
        near = striking_distance(pages, console, options)
        found = {}
        for variant, rows_in in (("without", console.head(0)), ("with", console)):
            with_console = _stored_console(tables, SITES[name], rows_in)
            encoder = default_embedder().for_site(with_console.path, SITES[name])
            result, _, _ = plan_for_site(with_console, SITES[name], options, datetime.now(), encoder)
            targets = result.plan["target_page_id"]
            ids = read_site(tables.path, "staging.pages", SITES[name], ["page_id"])["page_id"]
            into = int(targets.is_in(ids.filter(pl.Series(near)).implode()).sum())
            share = equity_moved(result.page_rows, near)["striking_distance"]
            found[variant] = (result.plan.height, into, share)
        rows.append(
            [name, f"{int(near.sum())} of {pages.height}",
             *(f"{found[v][1]} of {found[v][0]}" for v in found), f"{found['with'][2][0]:.2%}",
             *(f"{found[v][2][1]:.2%}" for v in found)]
        )  # fmt: skip
    print_table(
        "A Search Console export's pages in striking distance (positions 5-20, median impressions or more)",
        rows,
        ["set", "in striking distance", "new links into them, without", "with", "PageRank share before",
         "after, without", "with"],
    )  # fmt: skip


def _stored_console(tables, site: str, console: pl.DataFrame):
    """`tables` with `console` (url, impressions, position) as the site's raw.search_console rows."""
    rows = console.select(
        pl.lit(site).alias("site"), pl.lit("bench").alias("crawl_id"),
        pl.lit(datetime.now()).alias("loaded_at"), pl.lit("search_console.csv").alias("source_file"),
        pl.int_range(1, console.height + 1, dtype=pl.Int64).alias("row_number"), "url",
        pl.lit(None, dtype=pl.Int64).alias("clicks"), "impressions",
        pl.lit(None, dtype=pl.Float64).alias("ctr"), "position",
    ).cast(empty_frame("raw.search_console").schema)  # fmt: skip
    tables.replace_site_rows(site, {"raw.search_console": rows})
    return tables


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    figures = commands.add_parser("sense")
    figures.add_argument("--sets", nargs="+", default=["hugodocs", "sample"], choices=list(SITES))
    figures.add_argument("--warehouse")
    figures.add_argument("--site")
    sample = commands.add_parser("sample")
    sample.add_argument("--set", choices=list(SITES))
    sample.add_argument("--warehouse")
    sample.add_argument("--site")
    sample.add_argument("--links", type=int, default=30)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument(
        "--editors", type=int, default=0,
        help="also this many of the site's own in-content links, shuffled in (their origin: a key file)",
    )  # fmt: skip
    sample.add_argument(
        "--about", type=int, default=0, metavar="CHARS",
        help="also the first CHARS characters of each page's text (the set's own export where it has one)",
    )  # fmt: skip
    sample.add_argument(
        "--apart-from", nargs="*", default=[], metavar="FILE",
        help="earlier review files: the links they hold are not drawn again",
    )  # fmt: skip
    sample.add_argument("--out", required=True)
    scored = commands.add_parser("score")
    scored.add_argument("files", nargs="+")
    struck = commands.add_parser("striking")
    struck.add_argument("--sets", nargs="+", default=["hugodocs", "sample"], choices=list(SITES))
    struck.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "sense":
        sense(args.sets, args.warehouse, args.site)
    elif args.command == "sample":
        warehouse = args.warehouse or str(DATA / "quality" / args.set / "warehouse.duckdb")
        site = args.site or SITES[args.set]
        judged = judged_pairs(args.apart_from)
        rows = review_sample(warehouse, site, args.links, args.seed, judged)
        if args.editors:
            editors = editors_sample(warehouse, site, args.editors, args.seed, judged)
            rows, key = blind_mix(rows, editors, args.seed)
            key.write_csv(key_file(Path(args.out)))
        if args.about:
            rows = with_openings(rows, page_openings(args.set, warehouse, site, args.about))
        rows.write_csv(args.out)
        print(f"wrote {args.out}" + (f" and its key {key_file(Path(args.out))}" if args.editors else ""))
    elif args.command == "striking":
        striking(args.sets, args.seed)
    else:
        score(args.files)


if __name__ == "__main__":
    main()
