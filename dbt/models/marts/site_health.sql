{{ config(unique_key=['site', 'crawl_id', 'scenario'], on_schema_change='append_new_columns') }}
-- Before/after metrics of every crawl of every site, kept over time: a new crawl adds rows, a re-run of
-- the same crawl replaces its own.
-- A column added to the metrics (links_known) is added to the kept history, empty for older rows.
select
    site || '|' || crawl_id || '|' || scenario as health_key,
    *
from {{ ref('stg_site_metrics') }}
