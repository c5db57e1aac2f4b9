"""Model versions: what each was trained on and scored, and re-activating an earlier one.

State keys (prefixed with the component's ``key``): ``{key}_versions`` (the table),
``{key}_activate_choice`` and ``{key}_activate``.
"""

from __future__ import annotations

import streamlit as st

from app_ui import messages
from app_ui.context import ModelContext
from vrvm.services import models
from vrvm.services.text import plain_markdown


def show(key: str, ctx: ModelContext) -> None:
    table = models.versions_table(ctx.home)
    st.dataframe(table, hide_index=True, key=f"{key}_versions", width="stretch")
    others = [int(v) for v in table["version"] if int(v) != ctx.version]
    if not others:
        return
    left, right = st.columns([2, 1])
    choice = left.selectbox("Re-activate a previous version", others, key=f"{key}_activate_choice")
    right.write("")
    if right.button("Activate", key=f"{key}_activate"):
        try:
            models.activate_version(ctx.home, int(choice))
        except models.StoreBusyError as exc:
            st.error(plain_markdown(exc))
            return
        messages.say(f"Version {choice} is active again.")
        st.rerun()
