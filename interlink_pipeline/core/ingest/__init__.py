"""From crawl exports to pages: file readers, header aliases, the drop folder, cleaning."""
