"""Exporting the active model to share it: snapped to zone centres unless asked otherwise.

State keys (prefixed with the component's ``key``): ``{key}_raw`` (export the exact
relevance vectors), ``{key}_prepare`` (the button that builds the file) and
``{key}_file`` (the last export: its sentence, file name and bytes, for the download
button), kept with the model and the choice it was made for
(:func:`app_ui.context.keep`): another active version or the other choice forgets it.
"""

from __future__ import annotations

import streamlit as st

from app_ui.context import ModelContext, keep, kept
from vrvm.services.display.text import plain_markdown
from vrvm.services.versions import model_export


def show(key: str, ctx: ModelContext) -> None:
    """The export panel: what a model file holds, the choice, the file to download."""
    st.caption(
        "A model file holds no trip table, but every relevance vector is a training trip: "
        "its origin, destination and start time (and its travel time, for the maps). "
        "Snapped, they move to the centres of H3 cells and the middle of 15-minute "
        "slots, at the coarsest size that costs at most "
        f"{100 * model_export.DEFAULT_MAX_COST:g} % of CRPS on the model's training trips."
    )
    raw = st.checkbox(
        "Keep the exact relevance vectors (personal data: only for a trusted recipient)",
        key=f"{key}_raw",
    )
    if st.button(f"Prepare version {ctx.version} for download", key=f"{key}_prepare"):
        with st.spinner("Snapping and measuring the cost" if not raw else "Writing the model"):
            result, data = model_export.export_model(
                ctx.home, version=ctx.version, snap=not raw, by=ctx.access
            )
        suffix = "raw" if raw else f"snapped-r{result.resolution}"
        keep(
            f"{key}_file",
            (ctx.fingerprint, raw),
            (result.sentence(), f"vrvm_model_v{ctx.version}_{suffix}.zip", data),
        )
    prepared = kept(f"{key}_file", (ctx.fingerprint, raw))
    if prepared is not None:
        sentence, file_name, data = prepared
        st.info(plain_markdown(sentence), icon=":material/ios_share:")
        st.download_button(
            "Download the model (zip)",
            data,
            file_name=file_name,
            mime="application/zip",
            key=f"{key}_download",
        )
