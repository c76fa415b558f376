"""The shell of core/ingest: the crawl exports read into raw tables, the cleaned pages, the inbox sensor."""
