"""Hosts and URLs: validation of site keys and vectorised URL normalisation.

A page's identity is its *URL key*: host (lower case, default port dropped), path without a trailing
slash, and the query string without tracking parameters, sorted; scheme and fragment are ignored.
`url` keeps the live form a link should point to (crawled URL minus fragment and tracking parameters).
"""

from __future__ import annotations

import re

import duckdb
import polars as pl

from interlink_pipeline.core.errors import InputError

_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")

# Query parameters that only track a visit; they never change what a page shows.
TRACKING_PARAM_PATTERN = (
    r"(?i)^(utm_[a-z0-9_]+|gclid|gclsrc|dclid|gbraid|wbraid|fbclid|msclkid|yclid|twclid|ttclid|li_fat_id"
    r"|mc_cid|mc_eid|_ga|_gl|_hsenc|_hsmi|hsa_[a-z]+|mkt_tok|igshid|srsltid|s_kwcid|ef_id|rb_clickid"
    r"|oly_anon_id|oly_enc_id|vero_id|wickedid|ref_src|_branch_match_id|trk|trkcampaign|sc_campaign"
    r"|sc_channel|sc_content|sc_medium|sc_outcome|sc_geo|sc_country)$"
)
# Query parameters and path shapes that mark page 2+ of a paginated series.
PAGINATION_PARAM_PATTERN = (
    r"(?i)^(page|p|pg|paged|pagina|página|seite|pagenum|page_num|pageno|pagenumber)=\d+$"
)
PAGINATION_PATH_PATTERN = r"(?i)(/(page|pagina|página|seite|pagine|p)/\d+/?$)|([-_/]page[-_]?\d+/?$)"

# The page number of a page 2+ URL (path shapes, then query parameters), read from its url_key.
PAGE_NUMBER_PATTERN = (
    r"(?i)(?:/(?:page|pagina|página|seite|pagine|p)/(\d+)$|[-_/]page[-_]?(\d+)$|[?&](?:page|p|pg|paged|pagina"
    r"|página|seite|pagenum|page_num|pageno|pagenumber)=(\d+)(?:&|$))"
)

_URL_PARTS = r"^\s*([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#\s]*)([^?#]*)(?:\?([^#]*))?(?:#.*)?\s*$"


def normalize_host(value: str) -> str:
    """Return `value` as a site key (lower-case host name) or raise InputError saying why it is not one."""
    raw = value if isinstance(value, str) else str(value)
    candidate = raw.strip().lower().rstrip(".")
    hint = ""
    match = re.match(r"^[a-z][a-z0-9+.\-]*://([^/?#:]+)", candidate)
    if match:
        hint = f" Use the host alone: '{match.group(1)}'."
    if not candidate or any(ch in candidate for ch in "/:?#@ \t\\%") or candidate.startswith("."):
        raise InputError(f"'{raw}' is not a host name (expected something like 'www.example.com').{hint}")
    try:
        ascii_host = candidate.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise InputError(f"'{raw}' is not a valid host name: {exc}.") from None
    labels = ascii_host.split(".")
    if len(ascii_host) > 253 or len(labels) < 2 or not all(_HOST_LABEL.match(label) for label in labels):
        raise InputError(
            f"'{raw}' is not a host name: it needs at least two dot-separated labels of letters, digits and "
            "hyphens (for example 'www.example.com')."
        )
    if labels[-1].isdigit():
        raise InputError(f"'{raw}' is an IP address, not a host name; use the site's host name.")
    return ascii_host


def url_parts(urls: pl.Series) -> pl.DataFrame:
    """Normalised parts of each URL (one row per input, same order).

    Columns: url_valid, scheme, host, path, query (tracking parameters removed, order kept),
    had_tracking_params, url (live form), url_key (identity), is_paginated_url, series_key (the key of
    the first page of the paginated series the URL belongs to: its own key when it is not paginated).
    One regex pass over the distinct URLs (a links export repeats each page's URL as often as it links);
    query parameters are only split for the URLs that have a query.
    """
    urls = urls.cast(pl.String)
    distinct = urls.unique()
    parsed = _assembled(_with_queries(_split(distinct))).with_columns(distinct.alias("input"))
    return (
        pl.DataFrame({"input": urls})
        .join(parsed, on="input", how="left", nulls_equal=True, maintain_order="left")
        .drop("input")
    )


def _split(urls: pl.Series) -> pl.DataFrame:
    """row, scheme, host (lower case, no user info, default port or trailing dot), host_port (the
    authority as a link writes it), path ("/" when empty) and raw_query of each URL: one regex pass."""
    groups = (
        pl.DataFrame({"input": urls.cast(pl.String)})
        .with_row_index("row")
        .select(
            "row",
            pl.col("input")
            .str.extract_groups(_URL_PARTS)
            .struct.rename_fields(["scheme", "authority", "raw_path", "raw_query"])
            .alias("parts"),
        )
        .unnest("parts")
    )
    host_port = pl.col("authority").str.to_lowercase().str.replace(r"^.*@", "")
    split = groups.select(
        "row",
        pl.col("scheme").str.to_lowercase(),
        host_port.str.replace(r":(80|443)?$", "").str.strip_chars_end(".").alias("host"),
        host_port.str.replace(r":(80|443)$", "").alias("host_port"),
        pl.when(pl.col("raw_path").fill_null("") == "")
        .then(pl.lit("/"))
        .otherwise(pl.col("raw_path"))
        .alias("path"),
        pl.col("raw_query").fill_null(""),
    )
    return split.with_columns(ascii_hosts(split["host"]))


def _with_queries(base: pl.DataFrame) -> pl.DataFrame:
    """`base` with its query's parameters read: query (tracking parameters removed, order kept),
    key_query (sorted), series_query (sorted, without the page number), had_tracking_params, paging."""
    params = (
        base.filter(pl.col("raw_query") != "")
        .select("row", pl.col("raw_query").str.split("&").alias("param"))
        .explode("param")
        .filter(pl.col("param") != "")
        .with_columns(
            pl.col("param").str.replace(r"=.*$", "").str.contains(TRACKING_PARAM_PATTERN).alias("tracking"),
            pl.col("param").str.contains(PAGINATION_PARAM_PATTERN).alias("paging"),
        )
    )
    kept = (
        params.filter(~pl.col("tracking"))
        .group_by("row")
        .agg(
            pl.col("param").str.join("&").alias("query"),
            pl.col("param").sort().str.join("&").alias("key_query"),
            pl.col("param").filter(~pl.col("paging")).sort().str.join("&").alias("series_query"),
        )
    )
    flags = params.group_by("row").agg(
        pl.col("tracking").any().alias("had_tracking_params"), pl.col("paging").any().alias("paging")
    )
    return (
        base.join(kept, on="row", how="left", maintain_order="left")
        .join(flags, on="row", how="left", maintain_order="left")
        .with_columns(
            pl.col("query").fill_null(""),
            pl.col("key_query").fill_null(""),
            pl.col("series_query").fill_null(""),
            pl.col("had_tracking_params").fill_null(False),
        )
    )


def _assembled(frame: pl.DataFrame) -> pl.DataFrame:
    """The url_parts columns from the split URL and its read query."""
    key_path = (
        pl.when(pl.col("path") == "/").then(pl.col("path")).otherwise(pl.col("path").str.strip_chars_end("/"))
    )
    series_path = key_path.str.replace(PAGINATION_PATH_PATTERN, "")
    series_path = pl.when(series_path == "").then(pl.lit("/")).otherwise(series_path)
    valid = pl.col("scheme").is_in(["http", "https"]) & pl.col("host").str.contains(r"^[a-z0-9.\-\[\]:]+$")
    return frame.select(
        valid.fill_null(False).alias("url_valid"),
        "scheme",
        "host",
        "path",
        "query",
        "had_tracking_params",
        pl.concat_str(
            [pl.col("scheme"), pl.lit("://"), pl.col("host_port"), pl.col("path"), _query_suffix("query")]
        ).alias("url"),
        pl.concat_str([pl.col("host"), key_path, _query_suffix("key_query")]).alias("url_key"),
        (pl.col("path").str.contains(PAGINATION_PATH_PATTERN) | pl.col("paging").fill_null(False))
        .fill_null(False)
        .alias("is_paginated_url"),
        pl.concat_str([pl.col("host"), series_path, _query_suffix("series_query")]).alias("series_key"),
    )


def _query_suffix(column: str) -> pl.Expr:
    """The query in `column` after a "?", or nothing when the column is empty."""
    return pl.when(pl.col(column) != "").then(pl.lit("?") + pl.col(column)).otherwise(pl.lit(""))


def hosts(urls: pl.Series) -> pl.Series:
    """Lower-case host of each http(s) URL (null otherwise): the cheap path for site checks."""
    found = pl.DataFrame({"u": urls.cast(pl.String)}).select(
        pl.col("u")
        .str.extract(r"(?i)^\s*https?://(?:[^@/?#]*@)?([^/?#:\s]+)", 1)
        .str.to_lowercase()
        .str.strip_chars_end(".")
        .alias("host")
    )["host"]
    return ascii_hosts(found)


def ascii_hosts(hosts: pl.Series) -> pl.Series:
    """Hosts in their ASCII (punycode) spelling, the one site keys use: a crawler writes an IDN host as
    people read it (www.bücher.example), a site key or a links export may spell it xn--bcher-kva."""
    unicode = hosts.filter(hosts.str.contains(r"[^\x00-\x7f]")).unique()
    if unicode.is_empty():
        return hosts
    return hosts.replace({host: _punycode(host) for host in unicode.to_list()})


def _punycode(host: str) -> str | None:
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:  # not a host name: the URL is then invalid
        return None


def display_host(site: str) -> str:
    """A site key as people read it: an IDN host with its Unicode spelling beside the key
    ("www.xn--bcher-kva.example (www.bücher.example)"); any other host as it is."""
    try:
        unicode = site.encode("ascii").decode("idna")
    except UnicodeError:
        return site
    return site if unicode == site else f"{site} ({unicode})"


def url_key(url: str) -> str | None:
    """The identity key of one URL (None when it is not an http(s) URL)."""
    row = url_parts(pl.Series([url])).row(0, named=True)
    return row["url_key"] if row["url_valid"] else None


def stable_ids(values: pl.Series, length: int = 16) -> pl.Series:
    """Stable hex ids (an MD5 prefix, computed in DuckDB) for strings; equal inputs give equal ids."""
    with duckdb.connect() as con:
        con.register("id_input", pl.DataFrame({"v": values.cast(pl.String)}))
        ids = con.execute(f"SELECT substr(md5(v), 1, {int(length)}) AS id FROM id_input").pl()["id"]
    return ids.alias(values.name)
