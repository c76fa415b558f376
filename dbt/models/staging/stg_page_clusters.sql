select site, page_id, cluster_id, distance, is_representative
from {{ source('ml', 'page_clusters') }}
where {{ site_filter() }}
