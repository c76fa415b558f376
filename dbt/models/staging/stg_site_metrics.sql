select site, scenario, crawl_id, computed_at, pages, links, planned_links, orphan_pages, unreachable_pages,
       max_depth, median_depth, share_depth_le_3, share_depth_le_5, inlink_gini, mean_outlinks, links_known
from {{ source('graph', 'site_metrics') }}
where {{ site_filter() }}
