"""A success message carried to the next run (after ``st.rerun()``), shown once.

State key: ``messages_next``.
"""

from __future__ import annotations

import streamlit as st

from vrvm.services.display.text import plain_markdown

KEY = "messages_next"


def say(text: str) -> None:
    """Show ``text`` at the top of the page on the next run."""
    st.session_state[KEY] = text


def show() -> None:
    """Show (and forget) the message left by the previous run, if any."""
    message = st.session_state.pop(KEY, None)
    if message:
        st.success(plain_markdown(message), icon=":material/check_circle:")
