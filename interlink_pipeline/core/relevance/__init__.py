"""Which links the site's editors would write: site signals, link candidates and their updates, the
ranker learned from the site's own links, and the backtest that scores a plan against hidden links."""
