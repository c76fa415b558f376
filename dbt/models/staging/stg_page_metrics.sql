select *
from {{ source('graph', 'page_metrics') }}
where {{ site_filter() }}
