"""User strings made inert before Streamlit renders them as markdown.

File names, column names, series ids and messages quoting a file's cells come from whoever
uploaded the file. ``st.markdown``, ``st.error`` and friends render markdown, so a name
like ``![x](http://host/track.png)`` would make every viewer's browser fetch that URL, and
``**`` or ``[`` would restyle the page. :func:`plain` backslash-escapes every markdown
punctuation character so the string reads exactly as written.
"""

from __future__ import annotations

import re

__all__ = ["plain"]

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones markdown,
# GFM (tables, strikethrough, autolinks) and Streamlit (:emoji:, $math$) give a meaning
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:&\"'=])")


def plain(text: object) -> str:
    """``text`` as markdown that renders as the literal string (newlines kept as spaces)."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).splitlines()))
