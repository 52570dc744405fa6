"""The timeline's level-of-detail index over a trace, and its wire protocol."""
