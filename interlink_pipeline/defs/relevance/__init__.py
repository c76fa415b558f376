"""The shell of core/relevance: the link ranker, the link candidates and the backtest."""
