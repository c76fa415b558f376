-- every similar pair (near-duplicates excluded) in both directions, once, for lookups by (source, target)
with both_ways as (
    select site, source_page_id, target_page_id, score
    from {{ source('ml', 'similarity_pairs') }}
    where relation = 'similar' and {{ site_filter() }}
    union all
    select site, target_page_id, source_page_id, score
    from {{ source('ml', 'similarity_pairs') }}
    where relation = 'similar' and {{ site_filter() }}
)
select site, source_page_id, target_page_id, max(score) as score
from both_ways
group by all
