"""The encoder process: model registry and loading, micro-batching, routing to model holders."""
