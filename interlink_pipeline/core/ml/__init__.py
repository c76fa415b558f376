"""Models: text encoders and the embedding cache, similar pages, topic clusters."""
