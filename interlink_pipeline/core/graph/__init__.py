"""The link plan: centrality, the planner and its structural links, anchors, plan and page metrics."""
