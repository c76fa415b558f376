{{ config(unique_key='site') }}
-- Each link an editor decided about: the decision that stands (the newest in a decisions file's current
-- version), how often it was decided (edited files' earlier versions included), and whether the plan still
-- has it and a crawl has shown it live.
with decided as (
    select *,
           row_number() over (
               partition by site, link_id
               order by superseded_at is null desc, decided_at desc, source_file desc
           ) as newest,
           count(*) over (partition by site, link_id) as times_decided,
           min(decided_at) over (partition by site, link_id) as first_decided_at
    from {{ ref('stg_link_decisions') }}
)
select
    d.site || '|' || d.link_id as decision_key,
    d.site,
    d.link_id,
    d.source_page_id,
    d.target_page_id,
    d.source_url,
    d.target_url,
    d.decision,
    d.note,
    d.reason,
    d.decided_at,
    d.first_decided_at,
    d.times_decided,
    d.source_file,
    p.link_id is not null as in_plan,
    l.link_id is not null as live,
    l.crawl_id as live_crawl_id,
    l.seen_at as live_since
from decided d
left join {{ ref('stg_link_plan') }} p on p.site = d.site and p.link_id = d.link_id
left join {{ ref('stg_live_links') }} l on l.site = d.site and l.link_id = d.link_id
where d.newest = 1 and d.superseded_at is null and {{ site_filter('d.site') }}
