"""Readers: one per input format (Kineto JSON, Nsight Systems SQLite), each producing the
tables of :mod:`jupyter_traceview.model.schema` and nothing else."""
