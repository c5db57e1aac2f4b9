"""Adding trip files: upload, the cleaning report, the column-mapping form, into the store.

State keys (prefixed with the component's ``key``):

``{key}_upload``     the file uploader; ``{key}_reads`` read results per file
``{key}_maps``       column maps given in the mapping forms, per file
``{key}_added``      files already added to the trip store (id -> message)

Each file is read once (:func:`vrvm.services.uploads.read_upload`); nothing is stored
until its "Add" button is pressed (:func:`vrvm.services.store_admin.add_upload`).
"""

from __future__ import annotations

import streamlit as st

from app_ui.context import ModelContext
from vrvm.services import store_admin, uploads


def _file_id(upload) -> str:
    return str(getattr(upload, "file_id", None) or f"{upload.name}:{upload.size}")


def _mapping_form(key: str, fid: str, outcome: uploads.UploadOutcome) -> None:
    st.warning(
        f"**{outcome.name}**: the columns do not match a known export. Name them below.",
        icon=":material/table_edit:",
    )
    guess = uploads.guess_column_map(outcome.columns)
    choices = ["", *outcome.columns]
    with st.form(f"{key}_form_{fid}"):
        mapping = {}
        cols = st.columns(2)
        for i, (role, label) in enumerate(uploads.MAPPING_ROLES):
            default = guess.get(role, "")
            mapping[role] = cols[i % 2].selectbox(
                label, choices, index=choices.index(default), key=f"{key}_role_{fid}_{role}"
            )
        if st.form_submit_button("Read with these columns"):
            column_map = {role: col for role, col in mapping.items() if col}
            if "travel_time_s" in column_map and "end_time" in column_map:
                column_map.pop("end_time")
            st.session_state[f"{key}_maps"][fid] = column_map
            st.session_state[f"{key}_reads"].pop(fid, None)
            st.rerun()
    with st.expander("What was found"):
        st.code(outcome.error or "", language=None)


def _report(key: str, fid: str, outcome: uploads.UploadOutcome) -> None:
    report = outcome.report
    cols = st.columns(3)
    cols[0].metric("Rows read", f"{report.n_input:,}")
    cols[1].metric("Kept", f"{report.n_kept:,}")
    cols[2].metric("Dropped", f"{report.dropped:,}")
    st.caption(
        f"Schema: {report.schema} · times read in {report.tz}"
        + (f" · {report.n_empty_rows:,} empty rows skipped" if report.n_empty_rows else "")
    )
    if len(outcome.reasons):
        st.dataframe(outcome.reasons, hide_index=True, key=f"{key}_report_{fid}", width="stretch")
        if len(outcome.examples):
            with st.expander("Example rejected rows (as in the file)"):
                st.dataframe(
                    outcome.examples, hide_index=True, key=f"{key}_examples_{fid}", width="stretch"
                )
    else:
        st.caption("Every row passed the checks.")


def show(key: str, ctx: ModelContext) -> None:
    st.session_state.setdefault(f"{key}_reads", {})
    st.session_state.setdefault(f"{key}_maps", {})
    st.session_state.setdefault(f"{key}_added", {})
    files = st.file_uploader(
        "Trip files (CSV or Parquet; Chicago, NYC or canonical columns are recognised)",
        type=list(uploads.UPLOAD_TYPES),
        accept_multiple_files=True,
        key=f"{key}_upload",
        help=f"Up to {uploads.MAX_UPLOAD_MB} MB per file. Files are only parsed as tables: "
        "nothing in them is executed.",
    )
    reads = st.session_state[f"{key}_reads"]
    added = st.session_state[f"{key}_added"]
    for upload in files or []:
        fid = _file_id(upload)
        data = upload.getvalue()
        if fid not in reads:
            reads[fid] = uploads.read_upload(
                upload.name, data, column_map=st.session_state[f"{key}_maps"].get(fid)
            )
        outcome: uploads.UploadOutcome = reads[fid]
        with st.container(border=True):
            st.markdown(f"**{upload.name}** · {len(data) / 2**20:.2f} MB")
            if outcome.needs_mapping:
                _mapping_form(key, fid, outcome)
                continue
            if outcome.report is not None:
                _report(key, fid, outcome)
            if outcome.error:
                st.error(outcome.error, icon=":material/block:")
                continue
            if fid in added:
                st.success(added[fid], icon=":material/check_circle:")
                continue
            far = store_admin.distance_to_store_km(ctx.home, outcome.trips)
            if far is not None and far > store_admin.FAR_FROM_STORE_KM:
                st.warning(
                    f"These trips are {far:,.0f} km from the trips already in the store: "
                    "another city? A model trained on both spreads its zones over everything "
                    "in between. Clear the store first unless this is intended.",
                    icon=":material/travel_explore:",
                )
            if st.button(
                f"Add {len(outcome.trips):,} trips to the store",
                key=f"{key}_add_{fid}",
                type="primary",
            ):
                added[fid] = store_admin.add_upload(ctx.home, outcome)
                st.rerun()
