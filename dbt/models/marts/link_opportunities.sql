{{ config(unique_key='site') }}
-- The plan, ready to act on: each link with both pages' titles, the target's topic and depth, and the
-- evidence behind it; `priority` orders each source page's links (hubs first, then by score).
select
    l.site || '|' || l.source_page_id || '|' || l.target_page_id as link_key,
    l.link_id,
    l.site,
    l.source_page_id,
    l.source_url,
    s.title as source_title,
    l.target_page_id,
    l.target_url,
    t.title as target_title,
    l.anchor_text,
    l.sentence,
    l.reason,
    l.evidence,
    l.placement,
    l.in_navigation,
    l.weak,
    l.alternative_source_urls,
    l.score,
    l.probability,
    l.confidence,
    l.confidence_note,
    l.planned_since,
    l.added_because,
    sim.score as similarity,
    tc.cluster_id as target_cluster_id,
    c.label as target_cluster,
    sc.cluster_id = tc.cluster_id as same_cluster,
    m.depth_before as target_depth_before,
    m.depth_after as target_depth_after,
    row_number() over (
        partition by l.site, l.source_page_id
        order by (l.reason = 'hub') desc, l.score desc, l.target_page_id
    ) as priority
from {{ ref('stg_link_plan') }} l
join {{ ref('stg_pages') }} s on s.site = l.site and s.page_id = l.source_page_id
join {{ ref('stg_pages') }} t on t.site = l.site and t.page_id = l.target_page_id
left join {{ ref('stg_similarity_pairs') }} sim
    on sim.site = l.site and sim.source_page_id = l.source_page_id and sim.target_page_id = l.target_page_id
left join {{ ref('stg_page_clusters') }} sc on sc.site = l.site and sc.page_id = l.source_page_id
left join {{ ref('stg_page_clusters') }} tc on tc.site = l.site and tc.page_id = l.target_page_id
left join {{ ref('stg_clusters') }} c on c.site = l.site and c.cluster_id = tc.cluster_id
left join {{ ref('stg_page_metrics') }} m on m.site = l.site and m.page_id = l.target_page_id
