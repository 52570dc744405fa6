"""Readers: one per input format (Kineto JSON, Nsight Systems SQLite), each producing the
tables of :mod:`jupyter_traceview.model.schema` and nothing else.

Each reader is a package of its steps (:mod:`.kineto`, :mod:`.nsys`) whose ``__init__`` holds
what the loader uses; what readers share sits beside them (:mod:`.files`: finding and
opening files; :mod:`.common`; :mod:`.derive`: launch links, nesting, iterations;
:mod:`.memory` and :mod:`.op_args`: tables read from Kineto args; :mod:`.build`: the
compiled scanner, ``_kscan.c``)."""
