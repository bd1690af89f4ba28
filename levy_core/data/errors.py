"""The one exception of the data layer."""

from __future__ import annotations


class DataError(ValueError):
    """A problem with the user's data: the message says where and what to do."""
