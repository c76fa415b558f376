"""Editors' decisions about planned links: link ids, decisions files in (the CLI, the link_decisions step),
and what a refused file leaves (nothing)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import openpyxl
import polars as pl
import pytest
from playwright.sync_api import expect

from interlink_pipeline.core.graph.decision_files import read_decisions
from interlink_pipeline.core.graph.decisions import link_ids
from interlink_pipeline.core.publish.warehouse_reads import spreadsheet_tables
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    PROJECT_ROOT,
    SAMPLE_DIR,
    UP_TO_PLAN,
    call_cli,
    failure_message,
    materialization_metadata,
    opened,
    run_cli,
    run_site,
)
from interlink_pipeline_tests.site_runs import instance_at


@pytest.fixture
def sample_cli(cli_env, tmp_path, sample_site):
    """The command's environment over a copy of the session's sample (planned, exported), registered."""
    sample = sample_site.folder.copy(tmp_path / "sample")
    env = {**cli_env, "INTERLINK_WAREHOUSE": str(sample.warehouse), "INTERLINK_INBOX": str(sample.inbox)}
    done = call_cli(
        env,
        "register",
        str(SAMPLE_DIR / "internal_all.csv"),
        "--links",
        str(SAMPLE_DIR / "all_inlinks.csv"),
    )
    assert done.returncode == 0, done.stderr
    return env, sample


def _decisions(sample) -> pl.DataFrame:
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        return con.execute("SELECT * FROM graph.link_decisions ORDER BY decided_at, row_number").pl()


def _workbook(sample):
    return sample.warehouse.parent / "exports" / SAMPLE_HOST / "interlink_plan.xlsx"


def _plan(sample) -> pl.DataFrame:
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        return con.execute("SELECT * FROM graph.link_plan ORDER BY source_url, target_url").pl()


def test_link_ids_are_stable_and_name_the_pair():
    sources, targets = pl.Series(["a" * 16, "b" * 16]), pl.Series(["b" * 16, "a" * 16])
    ids = link_ids("www.x.example", sources, targets)
    assert ids.str.len_chars().to_list() == [16, 16] and ids[0] != ids[1]  # a link and its reverse differ
    assert ids.equals(link_ids("www.x.example", sources, targets))
    assert not ids.equals(link_ids("www.y.example", sources, targets))  # another site, other ids


def test_an_edited_workbook_round_trips_and_the_newest_decision_stands(sample_cli, tmp_path):
    """An editor fills in the plan's workbook with openpyxl (20 rejects, 20 accepts, a note), the command
    imports it; the spreadsheets show the decisions; a later CSV changes one, and both are kept."""
    env, sample = sample_cli
    plan = _plan(sample)
    assert plan["link_id"].n_unique() == plan.height
    assert plan["link_id"].equals(link_ids(SAMPLE_HOST, plan["source_page_id"], plan["target_page_id"]))
    workbook = openpyxl.load_workbook(_workbook(sample))
    sheet = workbook["link_plan"]
    header = [cell.value for cell in sheet[1]]
    assert header[0] == "link_id" and header[-2:] == ["decision", "note"]
    decision, note, link = header.index("decision") + 1, header.index("note") + 1, header.index("link_id") + 1
    decided = {}
    for row in range(2, 42):
        word = "reject" if row < 22 else "Accept"
        sheet.cell(row, decision, word)
        decided[sheet.cell(row, link).value] = word.lower()
    sheet.cell(2, note, "off topic for this guide")
    edited = tmp_path / "plan_reviewed.xlsx"
    workbook.save(edited)

    done = run_cli(
        env, "decisions", "import", str(edited), "--site", SAMPLE_HOST, "--no-plan"
    )  # it runs a step
    assert done.returncode == 0, done.stderr
    assert "plan_reviewed.xlsx: 20 accepted and 20 rejected links imported" in done.stdout
    stored = _decisions(sample)
    assert dict(zip(stored["link_id"], stored["decision"], strict=True)) == decided
    assert stored.filter(pl.col("note").is_not_null())["note"].to_list() == ["off topic for this guide"]
    kept = list((sample.inbox / SAMPLE_HOST / "decisions").iterdir())
    assert [p.name.endswith("-plan_reviewed.xlsx") for p in kept] == [True]
    assert set(stored["source_file"]) == {kept[0].name}
    rows = spreadsheet_tables(sample.warehouse, SAMPLE_HOST, lock_timeout_s=10)["link_plan"]
    shown = rows.filter(pl.col("decision").is_not_null())
    assert dict(zip(shown["link_id"], shown["decision"], strict=True)) == decided

    changed = next(link for link, word in decided.items() if word == "accept")
    first = plan.filter(pl.col("link_id") == changed).row(0, named=True)
    later = tmp_path / "second_thoughts.csv"
    pl.DataFrame(
        {"source_url": [first["source_url"]], "target_url": [first["target_url"]], "decision": ["rejected"]}
    ).write_csv(later)
    done = run_cli(env, "decisions", "import", str(later), "--site", SAMPLE_HOST, "--no-plan")
    assert done.returncode == 0, done.stderr
    history = _decisions(sample).filter(pl.col("link_id") == changed)
    assert history["decision"].to_list() == ["accept", "reject"]  # both kept, oldest first
    rows = spreadsheet_tables(sample.warehouse, SAMPLE_HOST, lock_timeout_s=10)["link_plan"]
    assert rows.filter(pl.col("link_id") == changed)["decision"].to_list() == ["reject"]  # the newest stands


def _plan_csv(sample, path, decisions: list[str], **changes) -> None:
    """The plan's CSV as an editor saves it: its first rows decided, columns as exported (`changes`
    replace whole columns)."""
    rows = _plan(sample).head(len(decisions)).select("link_id", "source_url", "target_url")
    rows = rows.with_columns(pl.Series("decision", decisions), pl.lit(None, dtype=pl.String).alias("note"))
    rows.with_columns(**{name: pl.Series(values) for name, values in changes.items()}).write_csv(path)


def _with_formula(sample, path) -> None:
    workbook = openpyxl.load_workbook(_workbook(sample))
    sheet = workbook["link_plan"]
    sheet.cell(2, [c.value for c in sheet[1]].index("decision") + 1, '=IF(TRUE,"accept","reject")')
    workbook.save(path)


def _in_cp1252(sample, path) -> None:
    _plan_csv(sample, path, ["accept"])
    frame = pl.read_csv(path).with_columns(pl.lit("très pertinent").alias("note"))
    path.write_bytes(frame.write_csv().encode("cp1252"))


BAD_FILES = {
    "an unknown decision word": (
        lambda sample, path: _plan_csv(sample, path, ["accept", "maybe", "reject", "later"]),
        "bad.csv: a decision is accept or reject (or blank for none), not row 2: 'maybe'; row 4: 'later'.",
    ),
    "a link decided both ways": (
        lambda sample, path: _plan_csv(
            sample,
            path,
            ["accept", "reject"],
            link_id=[_plan(sample)["link_id"][0]] * 2,
            source_url=[_plan(sample)["source_url"][0]] * 2,
            target_url=[_plan(sample)["target_url"][0]] * 2,
        ),
        "bad.csv: rows decide the same link both ways: row 1: accept",
    ),
    "URLs that are not the site's pages": (
        lambda sample, path: _plan_csv(
            sample,
            path,
            ["accept", "reject"],
            link_id=[None, None],
            target_url=[f"https://{SAMPLE_HOST}/no-such-page/", f"https://{SAMPLE_HOST}/tents/missing/"],
        ),
        f"bad.csv: 2 URL(s) are not pages of {SAMPLE_HOST} in its latest crawl (a page the crawl excluded, "
        f"or a typo?): row 1: https://{SAMPLE_HOST}/no-such-page/; row 2: https://{SAMPLE_HOST}/tents/missing/.",
    ),
    "another site's file": (
        lambda sample, path: _plan_csv(
            sample,
            path,
            ["accept"] * 3,
            source_url=["https://www.other.example/a/"] * 3,
            target_url=["https://www.other.example/b/"] * 3,
        ),
        f"bad.csv: these decisions are not for {SAMPLE_HOST}: 6 of its 6 URLs are on other hosts, most on "
        "'www.other.example' (6). Import it for its own site: --site www.other.example.",
    ),
    "a link id that is not its URLs' link": (
        lambda sample, path: _plan_csv(sample, path, ["accept", "accept"], link_id=["0" * 16, None]),
        "bad.csv: a link id is not the id of its row's URLs (were rows sorted or pasted with only some of "
        "their columns?): row 1: 0000000000000000",
    ),
    "a workbook with formulas": (
        _with_formula,
        "bad.xlsx: 1 cell(s) hold formulas (link_plan!",
    ),
    "another encoding": (
        _in_cp1252,
        "bad.csv: not UTF-8 or UTF-16 text: byte 0xe8 at offset",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_decisions_file_is_refused_whole_and_nothing_is_kept(sample_cli, tmp_path, case):
    env, sample = sample_cli
    make, message = BAD_FILES[case]
    bad = tmp_path / ("bad.xlsx" if "workbook" in case else "bad.csv")
    make(sample, bad)
    done = call_cli(
        env, "decisions", "import", str(bad), "--site", SAMPLE_HOST, "--no-plan"
    )  # refused before any run
    assert done.returncode == 2 and done.stderr.startswith(f"error: {message}"), done.stderr
    assert _decisions(sample).is_empty() and not (sample.inbox / SAMPLE_HOST / "decisions").exists()


def test_the_step_reads_each_content_once_and_a_refused_entry_changes_nothing(sample_cli, tmp_path):
    """Files dropped into decisions/ by hand: a new good file is read, and not again while its content
    stands; a bad file, a symbolic link to /etc/passwd, a folder, a pipe, a hidden file and a lock file are
    each named with why and change nothing (the step succeeds, its check warns, no content is echoed); an
    edited file is read again, its earlier version kept as history; a copy of a file is read once; removing
    files withdraws their decisions."""
    _, sample = sample_cli
    folder = sample.inbox / SAMPLE_HOST / "decisions"
    folder.mkdir()
    _plan_csv(sample, folder / "week1.csv", ["accept", "reject", None])

    def step() -> tuple[dict, list[str]]:
        with instance_at(tmp_path / "home") as instance:
            result = run_site(sample.warehouse, sample.inbox, instance, SAMPLE_HOST, steps=["link_decisions"])
        assert result.success, failure_message(result)
        warned = [
            str(e.event_specific_data.metadata.get("refused", ""))
            for e in result.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION" and not e.event_specific_data.passed
        ]
        assert "root:" not in "\n".join(str(e) for e in result.all_events)  # no line of /etc/passwd
        return materialization_metadata(result, "link_decisions"), warned

    metadata, warned = step()
    first = _decisions(sample)
    assert first["decision"].to_list() == ["accept", "reject"] and set(first["source_file"]) == {"week1.csv"}
    assert metadata["files_read_now"] == ["week1.csv"] and not warned
    metadata, _ = step()
    assert metadata["files_unchanged"] == 1 and _decisions(sample).equals(first)  # read once per content

    _plan_csv(sample, folder / "week2.csv", ["accept", "perhaps"])
    (folder / "evil.csv").symlink_to("/etc/passwd")
    (folder / "old.csv").mkdir()
    os.mkfifo(folder / "pipe.csv")
    shutil.copyfile(folder / "week1.csv", folder / ".hidden.csv")
    shutil.copyfile(folder / "week1.csv", folder / "~$week1.xlsx")
    metadata, warned = step()
    assert metadata["files_refused"] == [
        ".hidden.csv: a hidden file (its name starts with a dot), not read",
        "evil.csv: a symbolic link, not read: the folder reads only files put in it (copy the file in, or "
        "use interlink decisions import)",
        "old.csv: a folder, not read: put decisions files in decisions/ itself",
        "pipe.csv: not a regular file (a device, pipe or socket), not read",
        "~$week1.xlsx: a spreadsheet's lock file (the workbook is open in Excel), not read",
        "week2.csv: a decision is accept or reject (or blank for none), not row 2: 'perhaps'.",
    ]
    assert len(metadata["files_refused"]) == 6 and "week2.csv: a decision is" in metadata["warning"]
    assert warned and _decisions(sample).equals(first)  # nothing changed

    for entry in ("week2.csv", "evil.csv", "pipe.csv", ".hidden.csv", "~$week1.xlsx"):
        (folder / entry).unlink()
    (folder / "old.csv").rmdir()
    # the editor changes their mind in the file itself: reject -> accept
    _plan_csv(sample, folder / "week1.csv", ["accept", "accept", None])
    shutil.copyfile(folder / "week1.csv", folder / "week1 (copy).csv")
    metadata, warned = step()
    assert metadata["files_read_now"] == ["week1.csv"] and not warned
    assert metadata["files_repeated"] == ["week1 (copy).csv: the same content as week1.csv, read once"]
    history = _decisions(sample)
    assert history.height == 4 and history["superseded_at"].null_count() == 2  # the first version kept
    standing = history.filter(pl.col("superseded_at").is_null())
    assert standing["decision"].to_list() == ["accept", "accept"] and metadata["accepted"] == 2
    for entry in folder.iterdir():
        entry.unlink()
    metadata, _ = step()
    withdrawn = (
        "week1.csv: no longer in the decisions folder, so its 2 decisions are withdrawn (put the file "
        "back to restore them)"
    )
    assert metadata["files_gone"] == [withdrawn] and metadata["warning"] == withdrawn
    assert _decisions(sample).is_empty()


AFTER_DECISIONS = ["link_plan", "marts", "spreadsheet_exports", "html_report", "published_files"]


def _recrawl_with_links(sample, tmp_path, links: pl.DataFrame) -> tuple[Path, Path]:
    """The sample crawled again a fortnight later, its All Inlinks with `links` (source_url, target_url) added
    in the pages' content: the same pages, a new crawl."""
    crawl = tmp_path / "recrawl" / "internal_all.csv"
    crawl.parent.mkdir()
    crawl.write_text(
        (SAMPLE_DIR / "internal_all.csv").read_text(encoding="utf-8-sig").replace("2026-11-01", "2026-11-15")
    )
    inlinks = pl.read_csv(SAMPLE_DIR / "all_inlinks.csv", infer_schema=False)
    added = links.select(
        pl.lit("Hyperlink").alias("Type"), pl.col("source_url").alias("Source"),
        pl.col("target_url").alias("Destination"), pl.lit("Related guide").alias("Anchor"),
        pl.lit("200").alias("Status Code"), pl.lit("OK").alias("Status"), pl.lit("true").alias("Follow"),
        pl.lit("//main/p/a").alias("Link Path"), pl.lit("Content").alias("Link Position"),
        pl.lit("HTML").alias("Link Origin"),
    )  # fmt: skip
    links_file = crawl.with_name("all_inlinks.csv")
    pl.concat([inlinks, added], how="diagonal").select(inlinks.columns).write_csv(links_file)
    return crawl, links_file


def _check_sentences(sample, accepted: set[str]) -> None:
    """The to_do sheet says where each link goes: the sample's pages have no body text, so every link goes in
    its page's related links; three accepted links are then placed in a sentence (as the plan places a
    phrase it found in a page's text) and the sheet is read again off the warehouse."""
    with duckdb.connect(str(sample.warehouse)) as con:
        links = (
            con.execute("SELECT link_id, source_page_id, anchor_text FROM graph.link_plan").pl()
            .filter(pl.col("link_id").is_in(sorted(accepted)))
            .unique("source_page_id", keep="first").sort("link_id").head(3)
        )  # fmt: skip
        for link_id, page_id, anchor in links.iter_rows():
            text = f"Our guide. We tested the {anchor} on three trips! Then more."
            con.execute("UPDATE staging.pages SET body_text = ? WHERE page_id = ?", [text, page_id])
            offset, sentence = text.index(anchor), f"We tested the {anchor} on three trips!"
            con.execute(
                "UPDATE graph.link_plan SET anchor_offset = ?, sentence = ?, placement = 'contextual' "
                "WHERE link_id = ?",
                [offset, sentence, link_id],
            )
        # two pages whose text shares a snippet (a template's) linking one target: one edit, said on both
        shared = (
            con.execute(
                "SELECT link_id, source_page_id, target_page_id, anchor_text FROM graph.link_plan "
                "ORDER BY link_id"
            )
            .pl()
            .filter(
                ~pl.col("link_id").is_in(sorted(accepted))
                & ~pl.col("source_page_id").is_in(links["source_page_id"].implode())
            )
            .unique("source_page_id", keep="first", maintain_order=True)
            .head(2)
        )
        snippet = f"Every trip starts with the {shared['anchor_text'][0]} we trust."
        con.execute(
            "UPDATE graph.link_plan SET anchor_offset = 27, sentence = ?, placement = 'contextual', "
            "target_page_id = ?, anchor_text = ? WHERE link_id IN (?, ?)",
            [snippet, shared["target_page_id"][0], shared["anchor_text"][0], *shared["link_id"]],
        )
    todo = spreadsheet_tables(sample.warehouse, SAMPLE_HOST, lock_timeout_s=10)["to_do"]
    twice = todo.filter(pl.col("link_id").is_in(shared["link_id"].implode()))
    assert set(twice["how"]) == {"link the anchor in the snippet 2 pages share: edit the snippet once"}
    todo = todo.filter(~pl.col("link_id").is_in(shared["link_id"].implode()))
    placed = todo.filter(pl.col("link_id").is_in(links["link_id"].implode())).sort("link_id")
    expected = [f"We tested the {anchor} on three trips!" for anchor in links["anchor_text"]]
    assert placed["sentence"].to_list() == expected
    assert set(placed["how"]) == {"link the anchor where it stands in the sentence"}
    unplaced = todo.filter(pl.col("anchor_offset").is_null())
    assert unplaced["sentence"].null_count() == unplaced.height
    assert set(unplaced["how"]) <= {
        "add it to the page's related links, the anchor as its title",
        "add it to the home page's links to its sections",
        "add it to the page's list",
    }


def test_the_plan_keeps_accepted_links_refuses_rejected_ones_and_a_recrawl_finds_them_live(
    sample_cli, tmp_path
):
    """The issue's round trip: the workbook edited with openpyxl (20 rejects, 20 accepts) and imported by
    the command; the plan made again has every accepted link and none rejected; a re-crawl whose All
    Inlinks has 10 of the accepted links marks those 10 live in that crawl, and the report shows the
    figures in Chromium."""
    env, sample = sample_cli
    workbook = openpyxl.load_workbook(_workbook(sample))
    sheet = workbook["link_plan"]
    header = [cell.value for cell in sheet[1]]
    decided = {}
    for row in range(2, 42):
        word = "reject" if row % 2 else "accept"
        sheet.cell(row, header.index("decision") + 1, word)
        decided[sheet.cell(row, header.index("link_id") + 1).value] = word
    workbook.save(tmp_path / "reviewed.xlsx")
    done = run_cli(
        env, "decisions", "import", str(tmp_path / "reviewed.xlsx"), "--site", SAMPLE_HOST, "--no-plan"
    )
    assert done.returncode == 0, done.stderr
    accepted = {link for link, word in decided.items() if word == "accept"}
    rejected = set(decided) - accepted

    def steps(names):
        with instance_at(tmp_path / "home") as instance:
            result = run_site(sample.warehouse, sample.inbox, instance, SAMPLE_HOST, steps=names)
            assert result.success, failure_message(result)

    steps(AFTER_DECISIONS)
    plan = _plan(sample)
    assert accepted <= set(plan["link_id"]) and not rejected & set(plan["link_id"])
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        why = con.execute(
            "SELECT why, count(*) FROM graph.link_plan_changes WHERE change = 'removed' GROUP BY why"
        ).fetchall()
    assert ("rejected by an editor", 20) in why
    todo = pl.read_csv(sample.warehouse.parent / "exports" / SAMPLE_HOST / "to_do.csv")
    assert accepted <= set(todo["link_id"]) and not rejected & set(todo["link_id"])
    _check_sentences(sample, accepted)

    went_live = plan.filter(pl.col("link_id").is_in(sorted(accepted)[:10]))
    crawl, links = _recrawl_with_links(sample, tmp_path, went_live.select("source_url", "target_url"))
    done = call_cli(env, "register", str(crawl), "--links", str(links))
    assert done.returncode == 0, done.stderr
    steps(["raw_crawl", "raw_links", "pages", *AFTER_DECISIONS])
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        live = con.execute("SELECT link_id, decision, crawl_id FROM graph.live_links").pl()
        crawl_id = con.execute("SELECT DISTINCT crawl_id FROM staging.pages").fetchall()
        marts = con.execute(
            "SELECT decision, live, in_plan, count(*) FROM marts.decisions GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert set(live["link_id"]) == set(went_live["link_id"]) and set(live["decision"]) == {"accept"}
    assert [(c,) for c in set(live["crawl_id"])] == crawl_id  # first seen in the re-crawl
    assert marts == [("accept", False, True, 10), ("accept", True, False, 10), ("reject", False, False, 20)]
    plan = _plan(sample)
    assert not set(live["link_id"]) & set(plan["link_id"])  # on the site now: no longer planned
    assert accepted - set(live["link_id"]) <= set(plan["link_id"]) and not rejected & set(plan["link_id"])

    report = sample.warehouse.parent / "exports" / SAMPLE_HOST / "report.html"
    with opened(report) as shown:
        page = shown.page
        figures = page.locator("#adoption-figures").inner_text()
        waiting = page.locator("#accepted-not-live tbody tr").count()
        weeks = page.locator("#adoption-weeks").inner_text()
        page.locator("#drilldown-page").fill(went_live["source_url"][0])
        page.locator("#drilldown-page").dispatch_event("change")
        drilled = page.locator("#drilldown-view").inner_text()
    assert f"{plan.height:,} links planned · 20 accepted · 20 rejected · acceptance rate 50%" in figures
    assert "· 10 live on the site · 10 accepted, not live yet" in figures and waiting == 10
    assert "accepted_to_date" in weeks and "live_to_date" in weeks
    assert "now: live, from the plan" in drilled


def test_ten_decisions_change_only_what_they_decide_and_each_new_link_says_why(sample_cli, tmp_path):
    """The issue's stable plan: 10 decisions on the three pages with the most planned links, imported (the
    command plans again). Every undecided link off the pages the decisions touch
    stands as it was (anchor and placement); the decided links are kept or gone; each new link says why in
    the plan and its changes, and a reviewed page takes at most new_links_per_reviewed_page of them; the
    workbook and the report list them as new since the review."""
    env, sample = sample_cli
    before = _plan(sample)
    busiest = before.group_by("source_url").len().sort("len", "source_url", descending=[True, False])
    chosen = before.filter(pl.col("source_url").is_in(busiest["source_url"].head(3).implode())).head(10)
    words = ["accept", "reject"] * 5
    chosen.select("link_id", "source_url", "target_url").with_columns(
        pl.Series("decision", words), pl.lit("checked by hand").alias("note")
    ).write_csv(tmp_path / "review.csv")
    done = run_cli(env, "decisions", "import", str(tmp_path / "review.csv"), "--site", SAMPLE_HOST)
    assert done.returncode == 0, done.stderr  # it plans again, and publishes the plan
    assert "5 accepted and 5 rejected links imported" in done.stdout and "succeeded" in done.stdout
    # this copy's Dagster home holds no record of the candidates' build: they are scored again first
    assert "the candidates are not on record as built after" in done.stdout
    after = _plan(sample)
    decided = dict(zip(chosen["link_id"], words, strict=True))
    planned = set(after["link_id"])
    assert {k for k, w in decided.items() if w == "accept"} <= planned
    assert not {k for k, w in decided.items() if w == "reject"} & planned
    touched = pl.concat([chosen["source_page_id"], chosen["target_page_id"]]).implode()
    untouched = before.filter(
        ~pl.col("link_id").is_in(list(decided))
        & ~pl.col("source_page_id").is_in(touched)
        & ~pl.col("target_page_id").is_in(touched)
    )
    place = ["link_id", "anchor_text", "placement", "planned_since"]
    assert untouched.height > 100
    assert untouched.select(place).join(after.select(place), on=place, how="anti").is_empty()
    added = after.join(before.select("link_id"), on="link_id", how="anti")
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        changes = con.execute(
            "SELECT source_page_id, target_page_id, why FROM graph.link_plan_changes WHERE change = 'added'"
        ).pl()
        last_review = con.execute("SELECT max(decided_at) FROM graph.link_decisions").fetchone()[0]
    pair = ["source_page_id", "target_page_id"]
    said = added.join(changes, on=pair).filter(pl.col("why") == pl.col("added_because"))
    assert said.height == added.height and (added["planned_since"] > last_review).all()
    assert not added["added_because"].str.contains("first plan|before reasons").any()
    on_reviewed = added.filter(pl.col("source_page_id").is_in(chosen["source_page_id"].implode()))
    assert (on_reviewed.group_by("source_page_id").len()["len"].max() or 0) <= 1
    exports = sample.warehouse.parent / "exports" / SAMPLE_HOST
    sheet = openpyxl.load_workbook(exports / "interlink_plan.xlsx", read_only=True)["new_since_review"]
    header, *rows = sheet.iter_rows(values_only=True)
    assert {row[header.index("link_id")] for row in rows} == set(added["link_id"])
    with opened(exports / "report.html") as shown:
        tab = shown.page.locator("#new-since-review")
        shown_rows, heading = tab.locator("tbody tr").count(), tab.locator("h2").inner_text()
    assert shown_rows == added.height and f"{added.height:,} new since your last review" in heading
    # two decisions more: the kept ranker's scores stand and the candidates are on record, so nothing is
    # fitted or scored anew
    after.filter(~pl.col("link_id").is_in(list(decided))).head(2).select(
        "link_id", "source_url", "target_url", pl.lit("reject").alias("decision")
    ).write_csv(tmp_path / "more.csv")
    done = run_cli(env, "decisions", "import", str(tmp_path / "more.csv"), "--site", SAMPLE_HOST)
    assert done.returncode == 0, done.stderr
    assert "the ranker is kept" in done.stdout and "graph/link_plan " in done.stdout
    assert "ml/link_candidates" not in done.stdout and "ml/link_ranker_runs" not in done.stdout


def test_an_import_plans_from_the_candidates_only_while_they_are_newer_than_what_they_read():
    """A decisions import skips scoring only when the site's candidates were built after the pages, links
    and ranker they read (a step run alone from the UI leaves them behind); another site's runs and the
    decisions themselves say nothing of them."""
    from interlink_pipeline.cli.commands import candidates_current
    from interlink_pipeline.defs.tables import table_key

    def materialised(instance, table: str, site: str = SAMPLE_HOST) -> None:
        instance.report_runless_asset_event(dg.AssetMaterialization(table_key(table), partition=site))

    with dg.DagsterInstance.ephemeral() as instance:
        assert not candidates_current(instance, SAMPLE_HOST)  # never built
        for table in ("staging.pages", "raw.crawl_links", "ml.link_ranker_runs", "ml.link_candidates"):
            materialised(instance, table)
        assert candidates_current(instance, SAMPLE_HOST)
        materialised(instance, "graph.link_decisions")
        materialised(instance, "staging.pages", "www.other.example")
        assert candidates_current(instance, SAMPLE_HOST)
        materialised(instance, "staging.pages")  # the pages again, alone
        assert not candidates_current(instance, SAMPLE_HOST)


def test_an_import_that_cannot_ask_whether_the_ranker_fits_plans_again_in_full(
    sample_site, tmp_path, monkeypatch
):
    """The question comes after the decisions are recorded: where it cannot be asked the import plans again
    in full (its own steps say why, where the decisions stand), and a home with no record of the candidates'
    build scores them again."""
    from interlink_pipeline.cli.commands import PLAN_STEPS, REPLAN_STEPS, replan_steps

    sample = sample_site.folder.copy(tmp_path / "sample")
    monkeypatch.setenv("INTERLINK_WAREHOUSE", str(sample.warehouse))
    with dg.DagsterInstance.ephemeral() as instance:
        steps, why = replan_steps(instance, "www.unknown.example")
        assert steps == REPLAN_STEPS and why.startswith(
            "whether the kept ranker still fits could not be asked"
        )
        assert "staging.pages has no rows for www.unknown.example" in why
        steps, why = replan_steps(instance, SAMPLE_HOST)
        assert steps == REPLAN_STEPS and "not on record as built after" in why
    assert set(PLAN_STEPS) < set(REPLAN_STEPS)


def test_decisions_made_in_the_report_download_as_a_file_the_import_takes_and_the_next_plan_honours(
    sample_cli, tmp_path
):
    """In Chromium, on the page the report opens on: all its links accepted at once with a note, then 2 of
    them rejected one by one, one with its own note; then all the links into a page rejected at once. The
    downloaded file, notes included, is imported by the command, and the plan made again keeps the accepted
    and drops the rejected."""
    env, sample = sample_cli
    report = sample.warehouse.parent / "exports" / SAMPLE_HOST / "report.html"
    with opened(report) as shown:
        page = shown.page
        actions = page.locator("#drilldown-view li.action")
        count = actions.count()
        on_page = [actions.nth(i).get_attribute("data-link-id") for i in range(count)]
        bulk = page.locator("#drilldown-view .bulk")
        bulk.get_by_label("note for these decisions").fill("fits the guide")
        bulk.locator(".bulk-group").first.get_by_role("button", name="accept all").click()
        expect(page.locator("#decision-counts")).to_have_text(f"{count} accepted · 0 rejected")
        for i in (0, 1):
            actions.nth(i).get_by_label("reject", exact=True).check()
        actions.nth(1).get_by_label("note", exact=True).fill("wrong sense of the word")
        expect(page.locator("#decision-counts")).to_have_text(f"{count - 2} accepted · 2 rejected")
        # the page the third link goes to, its links in: all rejected at once
        target = actions.nth(2).locator(".where .url").inner_text()
        page.get_by_label("links into this page").check()
        picker = page.locator("#drilldown-page")
        picker.fill(target)
        picker.press("Enter")
        expect(page.locator("#drilldown-view .page-url")).to_have_text(target)
        into = [a.get_attribute("data-link-id") for a in page.locator("#drilldown-view li.action").all()]
        page.locator("#drilldown-view .bulk").get_by_role("button", name="reject all").click()
        with page.expect_download() as downloading:
            page.locator("#decisions-download").click()
        file = tmp_path / downloading.value.suggested_filename
        downloading.value.save_as(file)
    rejected = {*on_page[:2], *into}
    accepted = set(on_page) - rejected
    assert file.name == f"decisions-{SAMPLE_HOST}.csv" and accepted and len(into) > 1
    downloaded = pl.read_csv(file)
    assert downloaded.columns == ["link_id", "source_url", "target_url", "decision", "note"]
    done = run_cli(env, "decisions", "import", str(file), "--site", SAMPLE_HOST, "--no-plan")
    assert done.returncode == 0, done.stderr
    assert f"{len(accepted)} accepted and {len(rejected)} rejected links imported" in done.stdout
    stored = {row[0]: row[1:] for row in _decisions(sample).select("link_id", "decision", "note").rows()}
    assert stored[on_page[1]] == ("reject", "wrong sense of the word")
    assert stored[on_page[0]] == ("reject", "fits the guide")  # the bulk note stays with the link
    assert {stored[link] for link in accepted} == {("accept", "fits the guide")}
    assert {stored[link][0] for link in into} == {"reject"}
    with instance_at(tmp_path / "home") as instance:
        result = run_site(sample.warehouse, sample.inbox, instance, SAMPLE_HOST, steps=["link_plan"])
        assert result.success, failure_message(result)
    planned = set(_plan(sample)["link_id"])
    assert accepted <= planned and not rejected & planned


# Another `interlink` process holding a site, as a run of it does, until the test kills it.
HOLDER = """
import sys, time
from interlink_pipeline.cli.runs import locked_site
with locked_site(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


def test_an_import_refused_while_the_site_runs_leaves_nothing_and_the_same_content_is_imported_once(
    sample_cli, tmp_path
):
    env, sample = sample_cli
    reviewed = tmp_path / "reviewed.csv"
    _plan_csv(sample, reviewed, ["accept", "reject"])
    long_note = pl.read_csv(reviewed).with_columns(pl.Series("note", ["x" * 40_000, None]))
    long_note.write_csv(reviewed)  # past a workbook cell: said at import
    folder = sample.inbox / SAMPLE_HOST / "decisions"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, SAMPLE_HOST],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        during_cli_run = call_cli(
            env, "decisions", "import", str(reviewed), "--site", SAMPLE_HOST, "--no-plan"
        )
    finally:
        holder.kill()
        holder.wait()
    assert during_cli_run.returncode == 2, during_cli_run.stderr
    assert during_cli_run.stderr == (
        f"error: a run of {SAMPLE_HOST} is already in progress (interlink, process {holder.pid}); wait "
        "for it to finish, then run again.\n"
    )
    # a run the UI or the daemon started, still going
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        running = dg.DagsterRun(
            job_name="site_pipeline",
            status=dg.DagsterRunStatus.STARTED,
            tags={"dagster/partition": SAMPLE_HOST},
        )
        instance.add_run(running)
        during_ui_run = call_cli(
            env, "decisions", "import", str(reviewed), "--site", SAMPLE_HOST, "--no-plan"
        )
        instance.delete_run(running.run_id)
    assert during_ui_run.returncode == 2
    assert f"already in progress (run {running.run_id}, in the UI or the daemon)" in during_ui_run.stderr
    assert not folder.exists() and _decisions(sample).is_empty()  # refused: nothing kept, nothing read

    done = run_cli(env, "decisions", "import", str(reviewed), "--site", SAMPLE_HOST, "--no-plan")
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "warning: reviewed.csv: 1 note(s) are longer than a workbook cell holds (32,767 characters; rows 1): "
        "kept whole in the warehouse and the CSV files, cut in interlink_plan.xlsx.\n"
    )
    [kept] = folder.iterdir()
    again = call_cli(env, "decisions", "import", str(reviewed), "--site", SAMPLE_HOST, "--no-plan")
    assert again.returncode == 0, again.stderr
    assert (
        again.stdout
        == f"reviewed.csv: already imported for {SAMPLE_HOST} (as {kept.name}); nothing changed.\n"
    )
    assert list(folder.iterdir()) == [kept] and _decisions(sample)["decision"].to_list() == [
        "accept",
        "reject",
    ]


def test_accepted_links_are_kept_past_a_budget_and_those_whose_page_is_gone_are_named(sample_cli, tmp_path):
    """Issue 56's 200,000 decisions, in small: an editor accepts 14 links from one page (its budget is 10)
    and one into a page the next crawl no longer has. The plan keeps the 14; the one whose target is gone is
    said by the step's warning, status, and graph.link_plan_changes."""
    env, sample = sample_cli
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        pages = con.execute("SELECT url FROM staging.pages WHERE NOT is_home ORDER BY url").pl()["url"]
    source, gone = pages[0], pages[-1]
    rows = [(source, target, "accept") for target in pages[1:15]] + [(pages[1], gone, "accept")]
    decisions = tmp_path / "accepted.csv"
    pl.DataFrame(rows, schema=["source_url", "target_url", "decision"], orient="row").write_csv(decisions)
    done = run_cli(
        env, "decisions", "import", str(decisions), "--site", SAMPLE_HOST, "--no-plan"
    )  # it runs a step
    assert done.returncode == 0, done.stderr
    crawl = tmp_path / "recrawl" / "internal_all.csv"  # the same site crawled again, without one page
    crawl.parent.mkdir()
    export = pl.read_csv(SAMPLE_DIR / "internal_all.csv", infer_schema=False)
    export.filter(pl.col("Address") != gone).write_csv(crawl)
    assert call_cli(env, "register", str(crawl), "--keep-links").returncode == 0
    with instance_at(tmp_path / "home") as instance:
        steps = [step for step in UP_TO_PLAN if step != "link_decisions"] + AFTER_DECISIONS  # no backtest
        result = run_site(sample.warehouse, sample.inbox, instance, SAMPLE_HOST, steps=steps)
    assert result.success, failure_message(result)
    plan = _plan(sample)
    kept = plan.filter(pl.col("source_url") == source)
    assert set(pages[1:15]) <= set(kept["target_url"])  # 14 links on a page whose budget is 10
    budget = next(
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.event_specific_data.check_name == "link_plan_within_budget"
    )
    assert budget.passed and budget.metadata["pages_past_budget_by_accepted_links"].value >= 1
    metadata = materialization_metadata(result, "link_plan")
    assert metadata["accepted_not_kept"] == 1
    assert metadata["warning"] == (
        "1 of the 15 links editors accepted are not in the plan: 1 its target page is gone from the crawl "
        "(graph.link_plan_changes lists them: why 'accepted by an editor, not kept: …')"
    )
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        change = con.execute(
            "SELECT change, why FROM graph.link_plan_changes WHERE target_url = ? AND why LIKE 'accepted%'",
            [gone],
        ).fetchall()
    assert change == [("not kept", "accepted by an editor, not kept: its target page is gone from the crawl")]
    status = call_cli(env, "status", "--site", SAMPLE_HOST).stdout
    assert "decisions: 15 links accepted (14 in the plan), 0 rejected (never planned again)" in status
    assert "note: 1 accepted links are not kept: 1 its target page is gone from the crawl" in status


def test_a_workbook_is_read_on_its_decision_sheets_and_refused_in_a_decisions_files_terms(
    sample_cli, tmp_path
):
    """Issue 56: a workbook whose link_plan sheet was not first was refused with another sheet's columns
    and advice (column_map) that the command cannot take; a `decisions` path that is a file gave a
    16-line traceback. Issue 71: the work list (to_do) is decided in as well."""
    env, sample = sample_cli
    workbook = openpyxl.load_workbook(_workbook(sample))
    sheet = workbook["link_plan"]
    header = [cell.value for cell in sheet[1]]
    sheet.cell(2, header.index("decision") + 1, "accept")
    workbook.move_sheet("link_plan", offset=len(workbook.sheetnames))  # the last sheet now
    # sheets before it with the plan's other columns (to_do has source_url and target_url)
    assert workbook.sheetnames.index("to_do") < workbook.sheetnames.index("link_plan")
    assert "source_url" in [c.value for c in workbook["to_do"][1]]
    workbook.save(tmp_path / "reordered.xlsx")
    decided = read_decisions(tmp_path / "reordered.xlsx", SAMPLE_HOST)
    assert decided["decision"].to_list() == ["accept"]
    accepted = sheet.cell(2, header.index("link_id") + 1).value
    assert decided["link_id"].to_list() == [accepted]
    # the work list is read too: its decision for the same link stands over link_plan's (which is exported
    # with the standing decisions filled in), with its note; another link decided there only
    todo = workbook["to_do"]
    columns = [cell.value for cell in todo[1]]
    assert columns[-3:] == ["decision", "note", "link_id"] and "status" in columns
    rows = {todo.cell(r, len(columns)).value: r for r in range(2, todo.max_row + 1)}
    other = next(link for link in rows if link != accepted)
    for link, word, why in ((accepted, "reject", "not this page's subject"), (other, "accept", None)):
        todo.cell(rows[link], columns.index("decision") + 1, word)
        todo.cell(rows[link], columns.index("note") + 1, why)
    workbook.save(tmp_path / "worked.xlsx")
    worked = read_decisions(tmp_path / "worked.xlsx", SAMPLE_HOST).sort("link_id")
    assert worked.select("link_id", "decision", "note", "at").rows() == sorted(
        [
            (accepted, "reject", "not this page's subject", f"to_do row {rows[accepted] - 1}"),
            (other, "accept", None, f"to_do row {rows[other] - 1}"),
        ]
    )
    for name in ("link_plan", "to_do", "new_since_review"):  # the sheets with a decision column
        del workbook[name]  # none left: said in a decisions file's terms
    workbook.save(tmp_path / "no_plan.xlsx")
    refused = call_cli(
        env, "decisions", "import", str(tmp_path / "no_plan.xlsx"), "--site", SAMPLE_HOST, "--no-plan"
    )
    assert refused.returncode == 2 and "column_map" not in refused.stderr
    # (named: the sheet with the plan's URL columns, not the read_me before it)
    said = "error: no_plan.xlsx: no decision column on sheet 'changes_since_last_run'"
    assert refused.stderr.startswith(said)
    assert "a decisions file is the plan's link_plan.csv (or to_do.csv" in refused.stderr
    # the site's decisions path is a file someone made
    (sample.inbox / SAMPLE_HOST / "decisions").write_text("not a folder")
    _plan_csv(sample, tmp_path / "reviewed.csv", ["accept"])
    blocked = call_cli(
        env, "decisions", "import", str(tmp_path / "reviewed.csv"), "--site", SAMPLE_HOST, "--no-plan"
    )
    folder = sample.inbox / SAMPLE_HOST / "decisions"
    assert blocked.returncode == 2 and blocked.stderr == (
        f"error: {folder} is a file, not a folder: move it aside (decisions files go in a folder so named); "
        "nothing was imported.\n"
    )
    assert (sample.inbox / SAMPLE_HOST / "decisions").read_text() == "not a folder"


def test_a_warehouse_of_the_last_version_read_only_has_no_decision_figures_yet(tmp_path):
    """status opens the warehouse read-only: decisions stored before file versions were kept have no
    superseded_at until the next run's write adds it, nor a plan of the last version planned_since, and
    status says nothing of them rather than fail."""
    from interlink_pipeline.core.publish.warehouse_reads import decision_figures
    from interlink_pipeline.core.warehouse.database import connect, ensure_tables

    warehouse = tmp_path / "w.duckdb"
    with connect(warehouse) as con:
        ensure_tables(con)
        con.execute("ALTER TABLE graph.link_decisions DROP COLUMN superseded_at")
    assert decision_figures(warehouse, SAMPLE_HOST, lock_timeout_s=1, read_only=True) is None
    with connect(warehouse) as con:  # a run's write adds the column
        ensure_tables(con)
    figures = decision_figures(warehouse, SAMPLE_HOST, lock_timeout_s=1, read_only=True)
    assert figures == {
        "accepted": 0, "rejected": 0, "accepted_outcomes": {}, "new_since_review": 0, "waiting_for_review": 0
    }  # fmt: skip
    with connect(warehouse) as con:  # a plan made before links knew when they were planned
        con.execute("ALTER TABLE graph.link_plan DROP COLUMN planned_since")
    figures = decision_figures(warehouse, SAMPLE_HOST, lock_timeout_s=1, read_only=True)
    assert figures["new_since_review"] is None and figures["waiting_for_review"] is None
