"""The ``levy`` command (``main``) and its ``advise`` and ``watch`` subcommands.
"""
