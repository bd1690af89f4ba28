"""User strings made inert before Streamlit renders them as markdown.

File names, column names, series ids and messages quoting a file's cells come from whoever
uploaded the file. ``st.markdown``, ``st.error`` and friends render markdown, so a name
like ``![x](http://host/track.png)`` would make every viewer's browser fetch that URL, and
``**`` or ``[`` would restyle the page. :func:`plain` backslash-escapes every markdown
punctuation character so the string reads exactly as written.

Escaping is not enough against auto-linking: Streamlit's markdown (GFM) turns ``www.x.y``,
``http://…`` and ``a@b.c`` into links *after* escapes are resolved (the text node reads
``www.x.y`` again). :func:`plain` therefore also puts an invisible WORD JOINER (U+2060) on
both sides of every ``.``, ``@``, ``:`` and ``/``: ``www`` is no longer followed by ``.``, a
scheme by ``:``, a local part by ``@``, so nothing matches and the text reads the same (a
copy of it carries the joiners). This is the one helper for every string that came from a
user (file, column, channel and series names, zip names, messages quoting them) on its way
to ``st.markdown``, ``st.caption``, ``st.info``/``warning``/``error``/``success``,
``st.write``, widget labels and help texts.
"""

from __future__ import annotations

import re

__all__ = ["JOINER", "plain"]

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones markdown,
# GFM (tables, strikethrough, autolinks) and Streamlit (:emoji:, $math$) give a meaning
_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:&\"'=])")
# where GFM's autolinks need two characters side by side (after escaping: ``www\.``, ``\://``, ``@``)
_LINKING = re.compile(r"(?i)(www)(?=\\\.)|(\\:)(?=//)|(?=@)")
JOINER = "\u2060"  # WORD JOINER: invisible, zero width, no line break


def plain(text: object) -> str:
    """``text`` as markdown that renders as the literal string (newlines kept as spaces)."""
    escaped = _SPECIAL.sub(r"\\\1", " ".join(str(text).splitlines()))
    return _LINKING.sub(lambda m: (m.group(0) or "") + JOINER, escaped)
