"""Adding trip files: upload, the cleaning report, the column-mapping form, into the store.

State keys (prefixed with the component's ``key``):

``{key}_upload``     the file uploader; ``{key}_reads`` read results per file
``{key}_options``    read options given in the mapping forms, per file
``{key}_recipes``    recipe names to keep those options under, per file
``{key}_added``      files already added to the trip store (id -> message)

Each file is read once (:func:`vrvm.services.analyst.uploads.read_upload`); nothing is stored
until its "Add" button is pressed (:func:`vrvm.services.analyst.store_admin.add_upload`). Trips
outside the active model's area are flagged before they are added: they can train a new
model, not update this one (:func:`vrvm.services.analyst.area_check.check_same_area`).
"""

from __future__ import annotations

import streamlit as st

from app_ui.context import ModelContext
from vrvm.services.analyst import area_check, store_admin, uploads
from vrvm.services.display.text import plain_markdown
from vrvm.services.map import boundaries


def _file_id(upload) -> str:
    return str(getattr(upload, "file_id", None) or f"{upload.name}:{upload.size}")


_AUTO = "(detect)"
_FORMAT_HELP = {
    "date_format": "How dates are written. Day-first and month-first are never guessed: "
    "a file whose dates read both ways needs this. A strftime pattern such as %d-%m-%Y "
    "works too (type it below).",
    "clock_format": "hh:mm (also 12-hour with AM/PM), decimal hours (14.65) or seconds "
    "since midnight.",
    "weekday_format": "Day names are read as they are; numbers need their numbering.",
}


def _choice(
    label: str,
    options: list[str],
    default: str | None,
    key: str,
    help_text: str = "",
    empty: str = _AUTO,
):
    """A selectbox whose first entry (``empty``) stands for None."""
    choices = [empty, *options]
    index = choices.index(default) if default in choices else 0
    value = st.selectbox(label, choices, index=index, key=key, help=help_text or None)
    return None if value == empty else value


def _live_preview(key: str, fid: str, name: str, data: bytes, options, ctx: ModelContext) -> None:
    """The first rows read with the options as they stand, re-read when they change."""
    store = st.session_state.setdefault(f"{key}_live", {})
    stamp = repr(sorted(options.to_dict().items()))
    if fid not in store or store[fid][0] != stamp:
        outcome = uploads.read_upload(
            name, data, options=options, home=ctx.home, max_rows=uploads.PREVIEW_READ_ROWS
        )
        store[fid] = (stamp, outcome)
    outcome = store[fid][1]
    if outcome.report is None:
        st.caption(f"Preview: {plain_markdown((outcome.error or '').splitlines()[0])}")
        return
    report = outcome.report
    st.caption(
        f"Preview of the first {report.n_input:,} rows: {report.n_kept:,} kept, "
        f"{report.dropped:,} dropped; times read in {plain_markdown(report.tz)}"
        + (" (where the trips are)" if report.tz_inferred else "")
        + "".join(f"; read {plain_markdown(note)}" for note in report.notes.values())
    )
    if len(outcome.preview):
        st.dataframe(outcome.preview, hide_index=True, key=f"{key}_live_rows_{fid}")
    if len(outcome.reasons):
        st.dataframe(outcome.reasons, hide_index=True, key=f"{key}_live_reasons_{fid}")


def _mapping_form(
    key: str, fid: str, outcome: uploads.UploadOutcome, data: bytes, ctx: ModelContext
) -> None:
    """Ask which column holds each role and how times are written, preview the trips as
    read live, read the whole file on request and optionally keep the answers."""
    question = outcome.format_question
    if question is not None:
        st.warning(
            f"**{plain_markdown(outcome.name)}**: {plain_markdown(question)}",
            icon=":material/event_busy:",
        )
    elif outcome.zones_needed:
        st.warning(plain_markdown(outcome.error), icon=":material/map:")
    elif outcome.zone_question is not None:
        st.warning(
            f"**{plain_markdown(outcome.name)}**: {plain_markdown(outcome.zone_question)}",
            icon=":material/schedule:",
        )
    else:
        st.warning(
            f"**{plain_markdown(outcome.name)}**: the columns do not match a known export. "
            "Name them below.",
            icon=":material/table_edit:",
        )
    # What every door proposes for this file (the CLI's `vrvm inspect` prints the same).
    given = uploads.form_defaults(outcome)
    guess = given.column_map
    choices = ["", *outcome.columns]
    zone_files = [entry.name for entry in boundaries.saved_boundaries(ctx.home)]
    with st.container(border=True):
        st.markdown("**Which column holds what** (leave empty what the file does not have)")
        mapping = {}
        cols = st.columns(2)
        for i, (role, label) in enumerate(uploads.MAPPING_ROLES):
            default = guess.get(role, "")
            mapping[role] = cols[i % 2].selectbox(
                label,
                choices,
                index=choices.index(default) if default in choices else 0,
                key=f"{key}_role_{fid}_{role}",
            )
        st.markdown("**How times are written**")
        formats = {
            "date_format": given.date_format,
            "clock_format": given.clock_format,
            "weekday_format": given.weekday_format,
        }
        if question is not None:
            formats[question.option] = question.choices[0]
        date_format = _choice(
            "Dates",
            list(uploads.DATE_FORMATS[1:]),
            formats["date_format"],
            f"{key}_date_{fid}",
            _FORMAT_HELP["date_format"],
        )
        pattern = st.text_input(
            "... or a strftime pattern", key=f"{key}_pattern_{fid}", placeholder="%d-%m-%Y"
        )
        clock_format = _choice(
            "Clock",
            list(uploads.CLOCK_FORMATS[1:]),
            formats["clock_format"],
            f"{key}_clock_{fid}",
            _FORMAT_HELP["clock_format"],
        )
        weekday_format = _choice(
            "Weekdays",
            list(uploads.WEEKDAY_FORMATS),
            formats["weekday_format"],
            f"{key}_weekday_{fid}",
            _FORMAT_HELP["weekday_format"],
        )
        tz = st.text_input(
            "Time zone (IANA, optional)",
            value=given.tz or "",
            key=f"{key}_tz_{fid}",
            help="Default: the layout's city, else the zone where the trips are.",
        )
        zones = _choice(
            "Zone file for zone ids",
            zone_files,
            given.zones,
            f"{key}_zones_{fid}",
            "Trips given by zone ids are placed at a point inside each zone of this file "
            "(add zone files on the Predict page's sidebar).",
            empty="(none)",
        )
        recipe = st.text_input(
            "Remember as a recipe (optional name)",
            key=f"{key}_recipe_{fid}",
            help="The next file with the same columns is then read without this form.",
        )
        try:
            options = uploads.ReadOptions(
                tz=tz.strip() or None,
                column_map={role: col for role, col in mapping.items() if col},
                date_format=pattern.strip() or date_format,
                clock_format=clock_format,
                weekday_format=weekday_format,
                zones=zones,
            )
        except ValueError as exc:
            st.error(str(exc), icon=":material/block:")
            return
        _live_preview(key, fid, outcome.name, data, options, ctx)
        if st.button("Read with these columns", key=f"{key}_read_{fid}", type="primary"):
            st.session_state[f"{key}_options"][fid] = options
            st.session_state[f"{key}_recipes"][fid] = recipe.strip()
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
        + (" (where the trips are)" if report.tz_inferred else "")
        + (f" · {report.n_empty_rows:,} empty rows skipped" if report.n_empty_rows else "")
    )
    for note in report.notes.values():
        st.caption(f"Read {plain_markdown(note)}")
    if report.dateless:
        st.caption(
            "No calendar date in this file: trips are placed by weekday and clock, which is "
            "all the model needs."
        )
    if len(outcome.preview):
        with st.expander(f"First {len(outcome.preview)} trips as read", expanded=True):
            st.dataframe(outcome.preview, hide_index=True, key=f"{key}_preview_{fid}")
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
    st.session_state.setdefault(f"{key}_options", {})
    st.session_state.setdefault(f"{key}_recipes", {})
    st.session_state.setdefault(f"{key}_added", {})
    files = st.file_uploader(
        "Trip files (CSV or Parquet; Chicago, NYC, bike-share and canonical layouts are "
        "recognised, a form maps any other)",
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
            options = st.session_state[f"{key}_options"].get(fid)
            reads[fid] = uploads.read_upload(upload.name, data, options=options, home=ctx.home)
            recipe = st.session_state[f"{key}_recipes"].pop(fid, "")
            if recipe and reads[fid].ok:
                st.session_state[f"{key}_saved_{fid}"] = uploads.save_recipe(
                    ctx.home, recipe, reads[fid], by=ctx.access
                )
        outcome: uploads.UploadOutcome = reads[fid]
        with st.container(border=True):
            st.markdown(f"**{plain_markdown(upload.name)}** · {len(data) / 2**20:.2f} MB")
            mapped = fid in st.session_state[f"{key}_options"]
            if outcome.needs_mapping or (mapped and outcome.report is None):
                if mapped and not outcome.needs_mapping:
                    st.error(plain_markdown(outcome.error), icon=":material/block:")
                _mapping_form(key, fid, outcome, data, ctx)
                continue
            if outcome.recipe:
                st.info(
                    f"Read with your recipe “{plain_markdown(outcome.recipe)}” for these columns.",
                    icon=":material/menu_book:",
                )
            if saved := st.session_state.get(f"{key}_saved_{fid}"):
                st.success(plain_markdown(saved), icon=":material/bookmark_added:")
            if outcome.report is not None:
                _report(key, fid, outcome)
            if outcome.error:
                st.error(plain_markdown(outcome.error), icon=":material/block:")
                continue
            if fid in added:
                st.success(plain_markdown(added[fid]), icon=":material/check_circle:")
                continue
            far = store_admin.distance_to_store_km(ctx.home, outcome.trips)
            if far is not None and far > store_admin.FAR_FROM_STORE_KM:
                st.warning(
                    f"These trips are {far:,.0f} km from the trips already in the store: "
                    "another city? A model trained on both spreads its zones over everything "
                    "in between. Clear the store first unless this is intended.",
                    icon=":material/travel_explore:",
                )
            check = area_check.check_same_area(ctx.model, outcome.trips, training_trips=ctx.trips)
            if not check.ok:
                st.info(plain_markdown(check.reason), icon=":material/wrong_location:")
            if st.button(
                f"Add {len(outcome.trips):,} trips to the store",
                key=f"{key}_add_{fid}",
                type="primary",
            ):
                added[fid] = store_admin.add_upload(ctx.home, outcome, by=ctx.access)
                st.rerun()
