"""The reliability indices of one trip: planning time, buffer and misery index.

Shown under the Predict page's answer and in the Plan page's arrive-by section; the
numbers and their definitions come from :mod:`vrvm.services.answers.indices`. No state keys.
"""

from __future__ import annotations

import streamlit as st

from vrvm.services.answers import indices
from vrvm.services.answers.indices import ReliabilityIndices


def show(values: ReliabilityIndices | None) -> None:
    """Three metrics (with what each means on hover) and how free flow is defined."""
    if values is None:
        return
    table = values.table()
    columns = st.columns(len(table))
    for column, row in zip(columns, table.to_dict(orient="records"), strict=True):
        column.metric(row["index"], f"{row['value']:.2f}", help=row["meaning"])
    st.caption(values.free_flow_sentence() + " " + indices.definitions())
