"""The worker process: index pipeline, query pipeline, fusion, and the store (its only owner)."""
