"""The worker process (index pipeline, collection admin, sync writes) and, until they move to
packages of their own, the layers an api process runs too: the query pipeline, fusion, the store
and its replication (app/__main__.py plugs worker/search_node.py into each api process)."""
