"""What the dashboard shows, for every host (widget, server, HTML report): tabs, figures,
findings, tables and charts as JSON."""
