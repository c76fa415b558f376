select site, source_page_id, target_page_id, link_id, source_url, target_url, anchor_text, score, probability, reason, evidence,
       placement, weak, alternative_source_urls
from {{ source('graph', 'link_plan') }}
where {{ site_filter() }}
