"""Model versions: what each was trained on and scored, and re-activating an earlier one.

State keys (prefixed with the component's ``key``): ``{key}_versions`` (the table),
``{key}_activate_choice``, ``{key}_activate_confirm`` (the box that must be ticked: the
active model changes for everyone) and ``{key}_activate``.
"""

from __future__ import annotations

import streamlit as st

from app_ui import messages
from app_ui.context import ModelContext
from vrvm.services.display.text import plain_markdown
from vrvm.services.versions import models


def show(key: str, ctx: ModelContext) -> None:
    table = models.versions_table(ctx.home)
    st.dataframe(table, hide_index=True, key=f"{key}_versions", width="stretch")
    others = [int(v) for v in table["version"] if int(v) != ctx.version]
    if not others:
        return
    left, right = st.columns([2, 1])
    choice = left.selectbox("Re-activate a previous version", others, key=f"{key}_activate_choice")
    older = "an older version" if int(choice) < ctx.version else "another version"
    sure = left.checkbox(
        f"Yes, make version {choice} ({older}) the model every page and the API answer with",
        key=f"{key}_activate_confirm",
    )
    right.write("")
    if right.button("Activate", key=f"{key}_activate", disabled=not sure):
        try:
            models.activate_version(ctx.home, int(choice), by=ctx.access)
        except models.StoreBusyError as exc:
            st.error(plain_markdown(exc))
            return
        st.session_state.pop(f"{key}_activate_confirm", None)
        messages.say(f"Version {choice} is active again.")
        st.rerun()
