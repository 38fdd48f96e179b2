"""`graphrag-suite serve`: an HTTP API and a web page over one loaded index (needs the ``serve`` extra).

:func:`create_app` (``app.py``) builds the FastAPI app from one router per area (``routes_query.py``: questions,
``routes_documents.py``: listing, adding (JSON or files) and deleting documents, ``routes_browse.py``: methods,
stats, chunks, entities); ``runner.py`` runs a method (shared with the CLI and the MCP tool), ``evidence.py``
turns a method's evidence into nodes and edges, ``browse.py`` lists documents, chunks, entities and method
settings for the page, ``guards.py`` holds the body limit, the API key and Host checks and the cleaning of
incoming text, ``mcp_server.py`` the MCP tool, ``static/`` the page (``app.js``; ``graph.js`` draws graphs with
Cytoscape.js, vendored in ``static/vendor``).
"""

from .app import create_app

__all__ = ["create_app"]
