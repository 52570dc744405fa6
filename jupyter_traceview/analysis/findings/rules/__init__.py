"""The findings rules, one per module; each registers itself with :func:`..registry.rule`."""
