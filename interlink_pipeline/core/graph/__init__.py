"""The link graph: candidates and their updates, site sections, the plan, graph metrics, the backtest."""
