"""SERP evidence against a real HTTP server on loopback (Serper's shape), the offline provider, candidates."""

import time

import duckdb
import numpy as np
import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.serp import capped_search, local_index
from interlink_pipeline.core.serp.local_index import search_kept
from interlink_pipeline.core.serp.local_search import LocalSearch
from interlink_pipeline.core.serp.queries import page_queries, search_scope
from interlink_pipeline.defs.serp.results import SerpApi
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    LIGHT,
    SAMPLE_DIR,
    failure_message,
    materialization_metadata,
    run_serp,
    write_export,
)
from interlink_pipeline_tests.serper_server import KEY, serper_for


def _count(path, sql, params=()):
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql, list(params)).fetchone()[0]


def test_query_template_and_sources(light_pages):
    assert search_scope("site:{host}/blog {query}", LIGHT) == ("site:{host}/blog {query}", "/blog")
    with pytest.raises(InputError, match=r"needs exactly one \{query\} placeholder"):
        search_scope("site:{host}", LIGHT)
    with pytest.raises(InputError, match=r"unknown placeholders \['domain'\]"):
        search_scope("site:{domain} {query}", LIGHT)
    supplied = pl.DataFrame({"url_key": [light_pages["url_key"][3]], "query": ["neck pain relief"]})
    asked = page_queries(light_pages, LIGHT, "site:{host} {query}", supplied)
    row = asked.filter(pl.col("page_id") == light_pages["page_id"][3]).row(0, named=True)
    assert row["query"] == f"site:{LIGHT} neck pain relief" and row["query_source"] == "queries file"
    assert set(asked["query_source"]) == {"queries file", "title"}
    # each page's query comes from the first source it has: queries file, main query, title, text
    pages = light_pages.head(4).with_columns(
        main_query=pl.Series([None, "supplied twice", "adjustments", None]),
        title=pl.Series([None, "A title", "Another title", None]),
    )
    asked = page_queries(pages, LIGHT, "{query}", supplied.with_columns(url_key=pl.lit(pages["url_key"][1])))
    assert asked["query_source"].to_list() == ["text", "queries file", "main_query column", "text"]
    assert asked["base_query"].to_list()[1:3] == ["neck pain relief", "adjustments"]
    titled = page_queries(pages.with_columns(main_query=pl.lit(None, pl.String)), LIGHT, "{query}")
    assert titled["query_source"].to_list() == ["text", "title", "title", "text"]


def test_serper_happy_path_then_everything_from_the_cache(warehouse_path, light_inbox, instance, light_pages):
    with serper_for(light_pages) as server:
        api = SerpApi(api_key=KEY, endpoint=server.endpoint)
        first = run_serp(warehouse_path, light_inbox, instance, api)
        assert first.success, failure_message(first)
        meta = materialization_metadata(first, "serp_results")
        queries = meta["queries"]
        assert meta["provider"] == "serper" and meta["requests_sent"] == meta["billed_requests"] == queries
        assert meta["cache_hits"] == 0 and meta["failed_requests"] == 0
        assert meta["cost_estimate_usd"] == pytest.approx(queries * 0.001)
        assert meta["matched_results"] > 0.9 * meta["results"]
        assert _count(warehouse_path, "SELECT count(*) FROM serp.cache") == queries
        assert (
            _count(warehouse_path, "SELECT count(*) FROM serp.results WHERE site = ?", [LIGHT])
            == meta["results"]
        )
        sent = len(server.log)

        second = run_serp(warehouse_path, light_inbox, instance, api)
        assert second.success
        again = materialization_metadata(second, "serp_results")
        assert again["cache_hits"] == queries and again["requests_sent"] == 0
        assert len(server.log) == sent  # nothing paid twice

        expired = run_serp(warehouse_path, light_inbox, instance, api, {"cache_ttl_days": 0})
        assert (
            materialization_metadata(expired, "serp_results")["requests_sent"] == queries
        )  # TTL over: refetched, cache rows replaced
        assert _count(warehouse_path, "SELECT count(*) FROM serp.cache") == queries


def test_retries_honour_retry_after_and_survive_500s_and_hangs(
    warehouse_path, light_inbox, instance, light_pages
):
    titles = light_pages["title"].drop_nulls().to_list()
    script = {
        titles[0]: ["429:1", "ok"],
        titles[1]: ["500", "500", "ok"],
        titles[2]: ["hang:3", "ok"],
        titles[3]: ["429:soon", "ok"],  # a Retry-After that is no number nor date: the backoff decides
    }
    with serper_for(light_pages, script=script) as server:
        result = run_serp(
            warehouse_path,
            light_inbox,
            instance,
            SerpApi(api_key=KEY, endpoint=server.endpoint),
            {"timeout_s": 1.5},
        )
        assert result.success, failure_message(result)
        meta = materialization_metadata(result, "serp_results")
        assert meta["failed_requests"] == 0 and meta["retries"] >= 5
        limited = [e for e in server.log if titles[0] in e["query"]]
        assert [e["status"] for e in limited] == [429, 200]
        assert limited[1]["time"] - limited[0]["time"] >= 0.9  # waited as Retry-After said
        assert [e["status"] for e in server.log if titles[1] in e["query"]] == [500, 500, 200]
        assert [e["status"] for e in server.log if titles[3] in e["query"]] == [429, 200]
        assert all(count == 1 for count in server.answered().values())  # no query answered twice


def test_malformed_json_fails_the_run_and_keeps_the_rest_cached(
    warehouse_path, light_inbox, instance, light_pages
):
    bad = light_pages["title"].drop_nulls()[5]
    with serper_for(light_pages) as server:
        api = SerpApi(api_key=KEY, endpoint=server.endpoint)
        assert run_serp(warehouse_path, light_inbox, instance, api).success
        before = _count(warehouse_path, "SELECT count(*) FROM serp.results")
    with serper_for(light_pages, script={bad: ["garbled"] * 10}) as server:
        api = SerpApi(api_key=KEY, endpoint=server.endpoint)
        result = run_serp(warehouse_path, light_inbox, instance, api, {"cache_ttl_days": 0, "max_retries": 2})
        assert not result.success
        message = failure_message(result)
        assert "1 of" in message and "retried up to 2 times" in message and "malformed JSON" in message
        assert bad in message and "are cached; re-run to retry the rest" in message
        assert (
            _count(warehouse_path, "SELECT count(*) FROM serp.results") == before
        )  # previous results intact
        refreshed = _count(
            warehouse_path, "SELECT count(*) FROM serp.cache WHERE fetched_at > now() - INTERVAL 1 MINUTE"
        )
        assert refreshed >= len(server.answered())
        tolerant = run_serp(
            warehouse_path,
            light_inbox,
            instance,
            api,
            {"max_retries": 0, "max_failed_share": 0.05, "cache_ttl_days": 0},
        )
        assert tolerant.success and materialization_metadata(tolerant, "serp_results")["failed_requests"] == 1


def test_an_invalid_key_stops_at_once_and_writes_nothing(warehouse_path, light_inbox, instance, light_pages):
    with serper_for(light_pages) as server:
        result = run_serp(
            warehouse_path, light_inbox, instance, SerpApi(api_key="wrong-key-0001", endpoint=server.endpoint)
        )
        assert not result.success
        message = failure_message(result)
        assert "rejected the API key (HTTP 403)" in message and "SERPER_API_KEY" in message
        assert "wrong-key-0001" not in message
        assert len(server.log) <= 4  # at most the requests already in flight (concurrency 4)
    assert _count(warehouse_path, "SELECT count(*) FROM serp.results") == 0


def test_budget_exhaustion_keeps_what_was_fetched_for_the_next_run(
    warehouse_path, light_inbox, instance, light_pages
):
    with serper_for(light_pages) as server:
        api = SerpApi(api_key=KEY, endpoint=server.endpoint)
        result = run_serp(warehouse_path, light_inbox, instance, api, {"budget": 10})
        assert not result.success and "request budget of 10 reached" in failure_message(result)
        assert len(server.log) == 10
        assert _count(warehouse_path, "SELECT count(*) FROM serp.cache") == 10
        assert _count(warehouse_path, "SELECT count(*) FROM serp.results") == 0  # no incomplete table
        resumed = run_serp(warehouse_path, light_inbox, instance, api)
        assert resumed.success
        meta = materialization_metadata(resumed, "serp_results")
        assert meta["cache_hits"] == 10 and meta["requests_sent"] == meta["queries"] - 10
        assert all(count == 1 for count in server.answered().values())


def test_the_key_never_leaves_the_process(warehouse_path, light_inbox, instance, light_pages, monkeypatch):
    secret = "sk-SECRET-serper-key-0123456789"
    from interlink_pipeline.defs.serp.results import default_serp_api

    with serper_for(light_pages) as server:
        server.key = secret
        monkeypatch.setenv("SERPER_API_KEY", secret)
        monkeypatch.setenv("INTERLINK_SERPER_ENDPOINT", server.endpoint)
        good = run_serp(warehouse_path, light_inbox, instance, default_serp_api())
        assert good.success
        server.key = "rotated"  # now the server rejects it: the failure message must not echo it either
        bad = run_serp(warehouse_path, light_inbox, instance, default_serp_api(), {"cache_ttl_days": 0})
        assert not bad.success
    logs = "\n".join(str(e.message) + str(e.event_specific_data) for r in (good, bad) for e in r.all_events)
    assert secret not in logs
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        for schema, table in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall():
            dump = con.execute(f'SELECT * FROM "{schema}"."{table}"').pl().write_ndjson()
            assert secret not in dump, f"{schema}.{table}"
    assert secret not in (warehouse_path.read_bytes().decode("latin-1"))


def test_queries_file_supplies_the_main_queries(warehouse_path, light_inbox, instance, light_pages):
    page = light_pages.filter(~pl.col("is_home"))["crawled_url"][0]
    write_export(
        light_inbox / LIGHT / "gsc_queries.csv",
        ["Page", "Query", "Clicks", "Impressions"],
        [
            [page, "spine doctor near me", "3", "1,200"],
            [page, "chiropractor for back pain", "41", "900"],
            ["https://www.lightchiropractic.sg/nope/", "ghost", "99", "99"],
        ],
    )
    with serper_for(light_pages) as server:
        result = run_serp(
            warehouse_path, light_inbox, instance, SerpApi(api_key=KEY, endpoint=server.endpoint)
        )
        assert result.success
        sent = {e["query"] for e in server.log}
    assert f"site:{LIGHT} chiropractor for back pain" in sent  # the top query by clicks
    assert f"site:{LIGHT} spine doctor near me" not in sent
    assert (
        dict(materialization_metadata(result, "serp_results")["query_sources"].iter_rows())["queries file"]
        == 1
    )


def test_local_provider_offline_and_candidates(sample_site):
    """The sample's run, with the default provider and no key: the local engine answers offline."""
    result, warehouse_path = sample_site, sample_site.warehouse
    assert result.success
    meta = materialization_metadata(result, "serp_results")
    assert (
        meta["provider"] == "local"
        and meta["requests_sent"] == 0
        and meta["matched_results"] == meta["results"]
    )
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        own = con.execute(
            "SELECT avg((matched_page_id = page_id)::INT) FROM serp.results WHERE rank = 1"
        ).fetchone()[0]
        candidates = con.execute("SELECT * FROM ml.link_candidates").pl()
    assert own > 0.9  # a page's own title finds the page first
    # the local engine's results reach the candidates as a signal of their own
    origins = set(candidates["origins"].str.split("+").explode())
    # (the sample's menus do not nest, so no "menu" pairs; its paginated listings give "listing" ones)
    assert origins == {"similar", "hierarchy", "graph", "mention", "serp", "listing"}
    assert (candidates.filter(pl.col("origins") == "serp")["serp_score"] > 0).all()
    assert (candidates["source_page_id"] != candidates["target_page_id"]).all()
    candidate_meta = materialization_metadata(result, "link_candidates")
    assert candidate_meta["preview"].columns[-4:] == ["on_page", "link_to", "probability", "origins"]


def test_local_search_keeps_the_best_results_ties_by_page(light_pages):
    """The local engine's top n per query (a partial sort) equals a full sort of every page's BM25 score,
    best first and ties by page position, for distinctive titles and for one-word queries that tie."""
    engine = LocalSearch(light_pages, "en")
    queries = [*light_pages["title"].drop_nulls().to_list()[:20], "chiropractic", "pain", "back", "care"]
    found = engine.search(queries, 3, block=7)
    scores = engine.scores(queries).toarray()
    tied = 0
    for index, row in enumerate(scores):
        matching = np.flatnonzero(row)
        expected = matching[np.lexsort((matching, -row[matching]))][:3]
        got = found.filter(pl.col("query_index") == index).sort("rank")
        assert got["row"].to_list() == expected.tolist()
        assert got["rank"].to_list() == list(range(1, len(expected) + 1))
        tied += len(matching) > 3 and row[expected[-1]] == np.sort(row[matching])[::-1][3]
    assert tied >= 1  # a tie at the cut was decided by page position


def test_provider_none_and_serper_without_key(warehouse_path, light_inbox, instance):
    none = run_serp(warehouse_path, light_inbox, instance, SerpApi(), {"provider": "none"})
    assert none.success and materialization_metadata(none, "serp_results")["results"] == 0
    missing = run_serp(warehouse_path, light_inbox, instance, SerpApi(), {"provider": "serper"})
    assert "provider 'serper' needs an API key: set SERPER_API_KEY" in failure_message(missing)


def test_timing_guard_for_the_fake_server(light_pages):
    """The fake server itself answers quickly (so the timings asserted above are the client's)."""
    import httpx

    with serper_for(light_pages) as server:
        started = time.monotonic()
        response = httpx.post(server.endpoint, json={"q": "chiropractor"}, headers={"X-API-KEY": KEY})
        assert response.status_code == 200 and response.json()["organic"]
        assert time.monotonic() - started < 2


def _recrawled(pages: pl.DataFrame, rng: np.random.Generator, round_: int) -> pl.DataFrame:
    """The next crawl: 1% of the titles changed (words of other titles added), three pages gone, three new
    (copies of others under new ids: pages that tie with them), sorted by page id."""
    n = pages.height
    titles = pages["title"].to_list()
    for i in rng.choice(n, n // 100, replace=False):
        titles[i] = f"{titles[i] or ''} {titles[rng.integers(n)] or ''} edition {round_}"
    changed = pages.with_columns(pl.Series("title", titles))
    gone = rng.choice(n, 3, replace=False)
    new = changed.sample(3, seed=round_).with_columns(pl.col("page_id") + f"-new{round_}")
    return pl.concat([changed.filter(~pl.int_range(pl.len()).is_in(gone)), new]).sort("page_id")


def test_the_kept_local_index_answers_as_a_full_search_under_its_statistics(monkeypatch):
    """Successive re-crawls through the kept index: only new queries are searched, and every answer is
    exactly a full search's under the kept statistics (ties by page id included), the known queries
    scored against the changed pages a block at a time (97 here: many blocks); past refresh_above of the
    pages changed, the index is built afresh, and a full build answers as the engine always did."""
    monkeypatch.setattr(local_index, "ENTERING_BLOCK", 97)
    raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST).frame
    pages = clean_pages(raw, SAMPLE_HOST).pages.sort("page_id")
    rng = np.random.default_rng(5)
    queries = pages.select(pl.coalesce("title", "text")).to_series().to_list()
    found, index, search = search_kept(pages, queries, 10, "", None, 0.05, None)
    assert search.mode == "full" and found.equals(LocalSearch(pages).search(queries, 10).drop("score"))
    moved = 0
    for round_ in range(3):
        pages = _recrawled(pages, rng, round_)
        queries = pages.select(pl.coalesce("title", "text")).to_series().to_list()
        found, index, search = search_kept(pages, queries, 10, "", None, 0.05, index)
        assert search.mode == "incremental" and search.pages_removed == 3
        assert 3 <= search.pages_changed <= pages.height // 100 + 3
        assert search.pages_searched <= search.pages_changed  # the new queries, nothing else
        full = LocalSearch(pages, statistics=index.statistics).search(queries, 10)
        assert found.equals(full.drop("score"))
        moved += search.pages_changed + search.pages_removed
    assert index.changed_since_build == moved
    same, _, unchanged = search_kept(pages, queries, 10, "", None, 0.05, index)  # nothing to search
    assert unchanged.pages_searched == 0 and same.equals(found)
    _, _, again = search_kept(_recrawled(pages, rng, 9), queries, 10, "", None, 0.05, index)
    assert again.mode == "full" and "more than 5%" in again.why


def test_capped_postings_answer_past_a_size_only_where_they_find_a_full_searchs_results(monkeypatch):
    """Past `capped_above` pages each word keeps its best-weighted pages only, and the pages found through
    them are scored in full: where the cap binds on no word the answers are the full search's; where it
    cuts too much (5 pages per word) or the check is planted to fail (a floor over 1), the full search
    answers, and the check says why; below the size nothing is checked."""
    raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST).frame
    pages = clean_pages(raw, SAMPLE_HOST).pages.sort("page_id")
    queries = list(dict.fromkeys(pages.select(pl.coalesce("title", "text")).to_series().to_list()))
    engine = LocalSearch(pages)
    full = engine.search(queries, 20)
    unbound = engine.search(queries, 20, per_word=pages.height)
    assert unbound.drop("score").equals(full.drop("score"))
    assert np.allclose(unbound["score"], full["score"], rtol=1e-5)

    found, check = capped_search.checked_search(engine, queries, 20, "", capped_above=None)
    assert found.equals(full) and (check.method, check.recall_at_k) == ("exact", None)
    monkeypatch.setattr(capped_search, "PAGES_PER_WORD", 5)
    found, check = capped_search.checked_search(engine, queries, 20, "", capped_above=1000)
    assert found.equals(full) and check.fell_back and check.recall_sample == 1000
    assert check.recall_at_k < 0.98 and "under the 0.98 floor: searched in full" in check.why
    monkeypatch.setattr(capped_search, "PAGES_PER_WORD", pages.height)
    found, check = capped_search.checked_search(engine, queries, 20, "", capped_above=1000)
    assert found.drop("score").equals(full.drop("score")) and not check.fell_back
    assert (
        check.described() == f"capped postings ({pages.height} pages per word), recall 1.000 on 1,000 pages"
    )
    found, check = capped_search.checked_search(engine, queries, 20, "", 1000, recall_floor=1.01)
    assert found.equals(full) and check.fell_back and check.recall_at_k == 1.0
    # a tie with a query's last full result counts as found, whichever tied page was listed
    last = pl.DataFrame({"query_index": [0, 0], "row": [1, 2], "score": [3.0, 2.0]})
    assert capped_search.capped_recall(last, last.with_columns(pl.Series("row", [1, 7]))) == 1.0
    assert capped_search.capped_recall(last, last.head(1)) == 0.5


def test_the_serp_step_says_how_its_local_search_searched(warehouse_path, light_inbox, instance):
    """lightchiropractic's 97 pages past a `capped_above` of 50: the capped search (250 pages per word: it
    binds on no word) finds every result of the full one, and the step's metadata says so."""
    result = run_serp(
        warehouse_path, light_inbox, instance, SerpApi(), {"provider": "local", "capped_above": 50}
    )
    assert result.success, failure_message(result)
    metadata = materialization_metadata(result, "serp_results")
    assert metadata["index"] == "full"
    assert metadata["search"] == "capped postings (250 pages per word), recall 1.000 on 97 pages"
