"""The layer that knows both derive/ and numeric/: lambdify derivations,
compare them with torch autograd and the numeric encoder, and report.

Checks live in one registry (:mod:`crosscheck.registry`); check modules in
:mod:`crosscheck.checks` register themselves on import.
"""
