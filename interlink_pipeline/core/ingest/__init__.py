"""From crawl exports to pages and links: file readers, header aliases, the drop folder, cleaning, and the
site's existing links (their graph and the sections its menus declare)."""
