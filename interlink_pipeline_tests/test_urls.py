import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.urls import display_host, hosts, normalize_host, stable_ids, url_key, url_parts


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("www.Example.COM", "www.example.com"),
        ("shop.example.co.uk.", "shop.example.co.uk"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("www.alpinegear.example", "www.alpinegear.example"),
    ],
)
def test_normalize_host_accepts_hosts(value, expected):
    assert normalize_host(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("https://www.example.com/blog", "Use the host alone: 'www.example.com'"),
        ("www.example.com/blog", "is not a host name"),
        ("example.com:8080", "is not a host name"),
        ("localhost", "at least two dot-separated labels"),
        ("192.168.0.1", "is an IP address"),
        ("ex ample.com", "is not a host name"),
        ("../../etc", "is not a host name"),
        ("", "is not a host name"),
        ("-bad-.com", "at least two dot-separated labels"),
    ],
)
def test_normalize_host_rejects_with_reason(value, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        normalize_host(value)


def test_url_normalisation_parts():
    frame = url_parts(
        pl.Series(
            [
                "HTTPS://WWW.Example.com:443/Shoes/?utm_source=x&color=red&gclid=1#reviews",
                "http://www.example.com/shoes?color=red",
                "https://www.example.com/",
                "https://www.example.com",
                "https://www.example.com/blog/page/3/",
                "https://www.example.com/c/boots?p=2",
                "https://www.example.com/c/boots?b=2&a=1",
                "mailto:someone@example.com",
            ]
        )
    )
    rows = frame.to_dicts()
    assert rows[0]["url"] == "https://www.example.com/Shoes/?color=red"  # path case kept, tracking dropped
    assert rows[0]["url_key"] == "www.example.com/Shoes?color=red"
    assert rows[0]["had_tracking_params"] is True
    assert rows[1]["url_key"] == "www.example.com/shoes?color=red"  # scheme-insensitive, path case-sensitive
    assert rows[2]["url_key"] == rows[3]["url_key"] == "www.example.com/"
    assert rows[3]["url"] == "https://www.example.com/"
    assert rows[4]["is_paginated_url"] and rows[5]["is_paginated_url"]
    assert not rows[2]["is_paginated_url"]
    # page 2+ of a series knows its first page; any other URL is its own
    assert rows[4]["series_key"] == "www.example.com/blog"
    assert rows[5]["series_key"] == "www.example.com/c/boots"
    assert rows[6]["series_key"] == rows[6]["url_key"]
    assert rows[6]["url_key"] == "www.example.com/c/boots?a=1&b=2"  # sorted params in the key only
    assert rows[6]["url"] == "https://www.example.com/c/boots?b=2&a=1"
    assert rows[7]["url_valid"] is False


def test_url_key_single_value_matches_batch():
    assert url_key("https://Shop.example.com/a/?utm_medium=email") == "shop.example.com/a"
    assert url_key("not a url") is None


def test_repeated_urls_are_parsed_once_and_given_back_row_for_row():
    """A links export repeats its pages' URLs: each distinct one is parsed once, and every row, nulls and
    invalid URLs included, gets what that URL gives alone."""
    urls = [
        "https://A.example/x/?utm_source=1&b=2",
        None,
        "not a url",
        "https://A.example/x/?utm_source=1&b=2",
        "http://a.example:80/blog/page/2/",
        None,
        "not a url",
    ]
    together = url_parts(pl.Series(urls * 3))
    alone = pl.concat([url_parts(pl.Series([url], dtype=pl.String)) for url in urls * 3])
    assert together.equals(alone) and together.height == 21
    assert together["url_key"][:5].to_list() == [
        "a.example/x?b=2", None, None, "a.example/x?b=2", "a.example/blog/page/2",
    ]  # fmt: skip


def test_stable_ids_are_deterministic_and_distinct():
    ids = stable_ids(pl.Series(["a", "b", "a"]))
    assert ids[0] == ids[2] != ids[1]
    assert ids.str.len_chars().to_list() == [16, 16, 16]
    assert stable_ids(pl.Series(["a"]), 32)[0] == "0cc175b9c0f1b6a831c399e269772661"  # md5("a")


def test_hosts_cheap_path():
    assert hosts(pl.Series(["https://User@WWW.Example.com:8080/x", "ftp://x.example/", None])).to_list() == [
        "www.example.com",
        None,
        None,
    ]


def test_an_idn_host_has_one_key_whichever_way_it_is_spelt():
    spellings = pl.Series(
        ["https://www.Bücher.example/a/?utm_source=x", "https://www.xn--bcher-kva.example/a"]
    )
    parts = url_parts(spellings)
    assert parts["url_valid"].all() and parts["url_key"].n_unique() == 1
    assert parts["host"].to_list() == ["www.xn--bcher-kva.example"] * 2
    assert parts["url"][0] == "https://www.bücher.example/a/"  # the live form keeps the crawl's spelling
    assert hosts(spellings).to_list() == ["www.xn--bcher-kva.example"] * 2
    assert normalize_host("www.bücher.example") == "www.xn--bcher-kva.example"
    assert display_host("www.xn--bcher-kva.example") == "www.xn--bcher-kva.example (www.bücher.example)"
    assert display_host("www.example.com") == "www.example.com"
    assert not url_parts(pl.Series(["https://b\u00fc\u00fc..x/"]))["url_valid"][0]  # no host name at all
