"""The trace model: the schema, classification, per-rank tables, the Trace, interval algebra,
collectives and clock alignment. Depends on nothing else of the package but ``errors``."""
