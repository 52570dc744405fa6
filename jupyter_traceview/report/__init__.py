"""``traceview report`` / ``tv.write_report``: the dashboard as one self-contained HTML file."""
