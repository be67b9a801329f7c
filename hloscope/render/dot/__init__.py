"""The DOT views: the diagrams (``draw``), their views (``views``), style (``style``), the one
quoting layer (``quote``) and the Graphviz run (``run``)."""
