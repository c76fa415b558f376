{{ config(unique_key='site') }}
-- Pages no other page linked to in the crawl (known only with an All Inlinks export), and how the plan
-- reaches them.
with rescue as (
    select site, target_page_id, source_url, anchor_text, reason,
           row_number() over (partition by site, target_page_id order by score desc, source_url) as n
    from {{ ref('stg_link_plan') }}
)
select
    s.page_key,
    s.site,
    s.page_id,
    s.url,
    s.title,
    s.cluster,
    s.depth_after,
    s.planned_inlinks,
    r.source_url as first_link_from,
    r.anchor_text as first_link_anchor,
    r.reason as first_link_reason
from {{ ref('page_scorecard') }} s
left join rescue r on r.site = s.site and r.target_page_id = s.page_id and r.n = 1
where s.orphan_before and {{ site_filter('s.site') }}
