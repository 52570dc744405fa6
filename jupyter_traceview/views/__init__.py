"""Presentation models with no UI package: the palette, the timeline's index and protocol.

They turn a Trace and the analyses into what a view shows (JSON and binary buffers);
charts, the dashboard, widgets and the server extension draw them."""
