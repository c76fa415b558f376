select site, link_id, source_page_id, target_page_id, source_url, target_url, reason, decision, crawl_id, seen_at
from {{ source('graph', 'live_links') }}
where {{ site_filter() }}
