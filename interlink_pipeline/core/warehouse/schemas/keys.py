"""The descriptions of the key columns nearly every table shares: the site and the page id."""

SITE = "Site key: the crawl's normalised host, e.g. www.example.com (the Dagster partition)."
PAGE_ID = "Stable page id: MD5 prefix of the page's URL key; the same URL keeps its id across crawls."
