"""Check modules; each registers its checks with :func:`crosscheck.registry.check` on import."""
