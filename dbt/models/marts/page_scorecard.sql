{{ config(unique_key='site') }}
-- One row per page: where it sits in the link graph before and after the plan, and its topic.
select
    p.site || '|' || p.page_id as page_key,
    p.site,
    p.page_id,
    p.url,
    p.title,
    p.section,
    p.is_home,
    m.cluster_id,
    c.label as cluster,
    m.is_hub,
    m.betweenness,
    m.inlink_quota,
    m.depth_before,
    m.depth_after,
    m.inlinks_before,
    m.inlinks_after,
    m.outlinks_before,
    m.outlinks_after,
    m.pagerank_before,
    m.pagerank_after,
    m.planned_inlinks,
    m.planned_outlinks,
    coalesce(m.inlinks_before = 0 and not p.is_home, false) as orphan_before,
    p.crawl_id
from {{ ref('stg_pages') }} p
join {{ ref('stg_page_metrics') }} m on m.site = p.site and m.page_id = p.page_id
left join {{ ref('stg_clusters') }} c on c.site = m.site and c.cluster_id = m.cluster_id
