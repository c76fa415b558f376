-- title: the de-branded title; a page whose title was only the brand shows its H1, else its URL
select site, page_id, url, path, section, coalesce(title, h1, url) as title, h1, is_home, crawl_id
from {{ source('staging', 'pages') }}
where {{ site_filter() }}
