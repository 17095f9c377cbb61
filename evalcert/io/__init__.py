"""Everything that reads or writes a user's file.

Domain packages (``data``, ``solvers``, ``irt``, ``logic``, ``compare``, ``diagnostics``) work in
memory and never import this package at module level; the readers here validate a file, check its
size before allocating, and hand the domain code validated in-memory objects.
"""
