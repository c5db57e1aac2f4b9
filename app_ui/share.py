"""What a planner takes away: a link to the view, and the answer as a sentence to copy.

The URL's query parameters restore origin, destination and time. State keys:
``{key}_restored`` (the link was read this session), ``{key}_warnings``. The parameters
are read once per session and written back after every run, so the address bar always
holds a link to the current view.

:func:`copy_box` shows a text with a Copy button. Not ``st.code``, whose copy button
comes with a 1.5 MB syntax highlighter that a new tab loads and compiles before it shows
the answer: on this project's machine, without a GPU, a new tab of the Predict page with
no map and no chart took 2.7-2.9 s with it and 1.7-1.8 s without (``BENCHMARKS.md``,
issue 37).
"""

from __future__ import annotations

import html

import streamlit as st

from vrvm.services.display.text import plain_markdown
from vrvm.services.map.area import ServiceArea
from vrvm.services.planning import url_state


def read_once(key: str, area: ServiceArea, tz: str) -> url_state.ViewParams | None:
    """The view in the URL on the session's first run, else None."""
    if st.session_state.get(f"{key}_restored"):
        return None
    st.session_state[f"{key}_restored"] = True
    view, warnings = url_state.from_query_params(st.query_params.to_dict(), area, tz)
    st.session_state[f"{key}_warnings"] = warnings
    return view


def show_warnings(key: str) -> None:
    for message in st.session_state.get(f"{key}_warnings") or []:
        st.warning(plain_markdown(message), icon=":material/link:")


def write(params: dict[str, str]) -> None:
    """Put the current view into the address bar (no rerun)."""
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)


_COPY_STYLE = (
    ".vrvm-copy{display:flex;gap:.75rem;align-items:flex-start;padding:.75rem 1rem;"
    "border-radius:.5rem;background:rgba(240,242,246,.8);font-size:.95rem;line-height:1.5}"
    ".vrvm-copy-text{flex:1;white-space:pre-wrap;overflow-wrap:anywhere}"
    ".vrvm-copy button{flex:none;cursor:pointer;font:inherit;font-size:.85rem;"
    "padding:.15rem .6rem;border:1px solid rgba(49,51,63,.2);border-radius:.5rem;"
    "background:white;color:rgb(49,51,63)}"
    ".vrvm-copy button:hover{border-color:rgb(255,75,75);color:rgb(255,75,75)}"
)
# One listener for every box on the page, added once per tab (the page's reruns insert
# the box again). It reads the text from the page, so no text is ever put into the
# script; where the clipboard is not available (a plain-http address other than
# localhost), the text is selected for Ctrl+C instead.
_COPY_SCRIPT = (
    "if(!window.vrvmCopy){window.vrvmCopy=true;document.addEventListener('click',e=>{"
    "const b=e.target.closest('.vrvm-copy button');if(!b)return;"
    "const text=b.closest('.vrvm-copy').querySelector('.vrvm-copy-text');"
    "const done=m=>{b.textContent=m;setTimeout(()=>{b.textContent='Copy';},1500);};"
    "const select=()=>{const r=document.createRange();r.selectNodeContents(text);"
    "const s=getSelection();s.removeAllRanges();s.addRange(r);"
    "done(document.execCommand('copy')?'Copied':'Selected: press Ctrl+C');};"
    "if(navigator.clipboard){navigator.clipboard.writeText(text.textContent)"
    ".then(()=>done('Copied'),select);}else{select();}});}"
)


def copy_box_html(text: str) -> str:
    """The HTML of :func:`copy_box`: ``text`` escaped, a Copy button and its script.

    Examples
    --------
    >>> body = copy_box_html('Zone <A> & "B", typically 12 min')
    >>> 'Zone &lt;A&gt; &amp; &quot;B&quot;, typically 12 min</span>' in body
    True
    >>> "<A>" in body
    False
    """
    return (
        f"<style>{_COPY_STYLE}</style>"
        f'<div class="vrvm-copy"><span class="vrvm-copy-text">{html.escape(text)}</span>'
        '<button type="button" title="Copy the sentence">Copy</button></div>'
        f"<script>{_COPY_SCRIPT}</script>"
    )


def copy_box(text: str) -> None:
    """Show ``text`` (user labels in it are escaped) in a box with a Copy button."""
    st.html(copy_box_html(text), unsafe_allow_javascript=True)  # our own script only
