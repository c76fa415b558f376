"""The shell of core/graph: the link plan and its metrics."""
