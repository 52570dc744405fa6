"""Notebook entry points: the ``%%traceprofile`` / ``%traceview`` magics and the recording
of profiled runs that they drive."""
