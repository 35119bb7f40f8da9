"""`python3 -m loader FILE --collection NAME`: bulk-load a JSON-lines file into Braid."""
