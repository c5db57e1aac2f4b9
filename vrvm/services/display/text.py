"""Text that came from users (file, column, zone and model names) made inert before a page
renders it as Markdown.

Streamlit renders captions, alerts, button labels and ``st.markdown`` as Markdown, with
its own extras (``:material/...:`` icons, ``$...$`` formulas). A file or model name such
as ``[report](http://example.org)`` or ``![x](http://example.org/p.png)`` would become a
link or fetch an image from elsewhere, and ``*``, ``_`` or ``$`` would change how a path
reads. :func:`plain_markdown` escapes every character that means something there, so the
text shows exactly as written; HTML built by the services (map tooltips) is escaped with
:func:`html.escape` where it is built (:mod:`vrvm.services.map.map_layers`).
"""

from __future__ import annotations

__all__ = ["plain_markdown"]

# Links and images need brackets, HTML and autolinks angle brackets, Streamlit's icons
# and colours colons; the rest is emphasis, code, formulas, headings and tables.
_SPECIAL = frozenset("\\`*_[]<>#|$~:")


def plain_markdown(text: object) -> str:
    """``text`` with every Markdown-significant character escaped by a backslash.

    Examples
    --------
    >>> print(plain_markdown("trips_2016*.csv"))
    trips\\_2016\\*.csv
    >>> print(plain_markdown("![x](http://e.org/p.png) :material/bomb:"))
    !\\[x\\](http\\://e.org/p.png) \\:material/bomb\\:
    """
    return "".join(f"\\{c}" if c in _SPECIAL else c for c in str(text))
