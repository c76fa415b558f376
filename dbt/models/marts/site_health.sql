{{ config(unique_key=['site', 'crawl_id', 'scenario']) }}
-- Before/after metrics of every crawl of every site, kept over time: a new crawl adds rows, a re-run of
-- the same crawl replaces its own.
select
    site || '|' || crawl_id || '|' || scenario as health_key,
    *
from {{ ref('stg_site_metrics') }}
