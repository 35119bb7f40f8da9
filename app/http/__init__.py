"""HTTP plumbing around the routes: API keys (`auth.py`), errors to answers (`errors.py`), body
limits and strict JSON (`limits.py`, `strict_json.py`), 503s that say why (`unavailable.py`,
`shutdown.py`), and the OpenAPI description and offline docs (`openapi.py`, `apidocs.py`)."""
