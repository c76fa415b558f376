select site, link_id, source_page_id, target_page_id, source_url, target_url, decision, note, reason, decided_at,
       source_file, row_number, file_digest, superseded_at
from {{ source('graph', 'link_decisions') }}
where {{ site_filter() }}
