"""SERP evidence: queries, the Serper client and its cache, the offline local search index."""
