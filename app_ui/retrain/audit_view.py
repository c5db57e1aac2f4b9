"""The audit log: who uploaded, trained, published, activated, deleted and exported what.

State key: ``{key}_audit`` (the table).
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from app_ui.context import ModelContext
from vrvm.services.access.policy import audit_entries

SHOWN = 200
_MAIN = ("time", "who", "how", "via", "action")


def show(key: str, ctx: ModelContext) -> None:
    """The newest entries of the home's audit log, newest first."""
    entries = audit_entries(ctx.home, last=SHOWN)
    if not entries:
        st.caption("Nothing has been recorded yet.")
        return
    rows = [
        {
            **{field: entry.get(field) for field in _MAIN},
            "details": json.dumps(
                {k: v for k, v in entry.items() if k not in (*_MAIN, "prev")}, ensure_ascii=False
            ),
        }
        for entry in reversed(entries)
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"{key}_audit", width="stretch")
    st.caption(
        f"The newest {min(SHOWN, len(entries))} entries of `audit.jsonl` in the data home "
        "(append-only; `vrvm audit` prints all of them and checks the chain)."
    )
