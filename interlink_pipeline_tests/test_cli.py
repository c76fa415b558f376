"""The `interlink` command, run as a user would (a subprocess with its own instance and warehouse)."""

import duckdb

from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import NUTRI, run_cli


def test_demo_materialises_the_sample(cli_env, tmp_path):
    done = run_cli(cli_env, "demo")
    assert done.returncode == 0, done.stderr
    assert f"registered {SAMPLE_HOST}" in done.stdout
    assert "succeeded in" in done.stdout and "pages" in done.stdout
    with duckdb.connect(cli_env["INTERLINK_DUCKDB_PATH"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM staging.pages").fetchone()[0] == 1700
    listing = run_cli(cli_env, "sites")
    assert f"{SAMPLE_HOST}: raw.crawl_pages=1,962" in listing.stdout


def test_register_infers_the_site_and_adds_the_partition(cli_env, tmp_path, crawls):
    done = run_cli(cli_env, "register", str(crawls / "nutrisport/internal_html.csv"))
    assert done.returncode == 0, done.stderr
    assert f"registered {NUTRI}" in done.stdout
    assert (tmp_path / "inbox" / NUTRI / "internal_html.csv").read_bytes() == (
        crawls / "nutrisport/internal_html.csv"
    ).read_bytes()
    assert f"{NUTRI}: not materialised yet" in run_cli(cli_env, "sites").stdout


def test_register_bad_input_fails_cleanly(cli_env, tmp_path):
    bad = tmp_path / "export.csv"
    bad.write_text("Page,Title\nx,y\n")
    done = run_cli(cli_env, "register", str(bad))
    assert done.returncode == 2
    assert "error:" in done.stderr and "no header row with a URL column" in done.stderr
    assert not (tmp_path / "inbox").exists()
    done = run_cli(cli_env, "register", str(bad), "--site", "https://www.example.com/")
    assert done.returncode == 2 and "Use the host alone: 'www.example.com'" in done.stderr


def test_generate_site(cli_env, tmp_path):
    done = run_cli(cli_env, "generate-site", "--pages", "500", "--out", str(tmp_path / "site"), "--no-links")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "internal_all.csv").exists() and not (
        tmp_path / "site" / "all_inlinks.csv"
    ).exists()
