select site, source_page_id, target_page_id, link_id, source_url, target_url, anchor_text, sentence, score, probability, reason, evidence,
       placement, in_navigation, weak, alternative_source_urls, confidence, confidence_note, planned_since,
       added_because
from {{ source('graph', 'link_plan') }}
where {{ site_filter() }}
