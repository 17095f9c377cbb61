"""CLI verbs. Each module here defines ``register(subparsers)``; :mod:`evalcert.cli`
discovers them all, so adding a verb never means editing a shared file."""
