select c.site, c.cluster_id, c.label, array_to_string(c.top_terms, ', ') as top_terms, c.size, c.cohesion,
       c.representative_page_id
from {{ source('ml', 'clusters') }} c
where {{ site_filter('c.site') }}
