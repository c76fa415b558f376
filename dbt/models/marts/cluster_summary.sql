{{ config(unique_key='site', on_schema_change='append_new_columns') }}
-- Each topic: its size and cohesion, how deep its pages sit and how well they are linked before and after,
-- and where the plan's links into it come from (the weakest linked topics are the ones to work on).
-- A column added here is added to a warehouse's existing table, empty for the sites not run since.
with pages as (
    select site, cluster_id, count(*) as pages, count(*) filter (orphan_before) as orphans_before,
           count(*) filter (is_hub) as hubs, avg(depth_before) as mean_depth_before,
           avg(depth_after) as mean_depth_after,
           median(inlinks_before) as median_inlinks_before, median(inlinks_after) as median_inlinks_after
    from {{ ref('page_scorecard') }}
    where {{ site_filter() }}
    group by all
),
planned as (
    select site, target_cluster_id as cluster_id, count(*) as planned_inlinks,
           count(*) filter (same_cluster) as planned_from_same_cluster
    from {{ ref('link_opportunities') }}
    where {{ site_filter() }}
    group by all
)
select
    c.site || '|' || c.cluster_id as cluster_key,
    c.site,
    c.cluster_id,
    c.label,
    c.top_terms,
    c.size,
    c.cohesion,
    r.url as representative_url,
    p.hubs,
    p.orphans_before,
    p.mean_depth_before,
    p.mean_depth_after,
    coalesce(pl.planned_inlinks, 0) as planned_inlinks,
    coalesce(pl.planned_from_same_cluster, 0) as planned_from_same_cluster,
    p.median_inlinks_before,
    p.median_inlinks_after
from {{ ref('stg_clusters') }} c
left join pages p on p.site = c.site and p.cluster_id = c.cluster_id
left join planned pl on pl.site = c.site and pl.cluster_id = c.cluster_id
left join {{ ref('stg_pages') }} r on r.site = c.site and r.page_id = c.representative_page_id
