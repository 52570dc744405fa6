"""Loading: finding rank files, the readers, the on-disk cache and the engines behind ``tv.load``.

Depends on :mod:`jupyter_traceview.model` only."""
