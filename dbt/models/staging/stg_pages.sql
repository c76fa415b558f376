select site, page_id, url, path, section, title, h1, is_home, crawl_id
from {{ source('staging', 'pages') }}
where {{ site_filter() }}
