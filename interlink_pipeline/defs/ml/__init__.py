"""The shell of core/ml: page embeddings, similar pages and topic clusters."""
