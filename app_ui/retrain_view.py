"""Retrain flow: trip store, uploads and cleaning reports, training, evaluation, publishing.

State keys (prefixed with the component's ``key``):

``{key}_upload``     the file uploader; ``{key}_reads`` cached read results per file
``{key}_maps``       column maps given in the mapping forms, per file
``{key}_added``      files already added to the trip store (id -> message)
``{key}_result``     the last :class:`vrvm.dashboard.RetrainResult` (unpublished)
``{key}_published``  message about the last publish / activation

Nothing here changes the active model except the explicit "Publish" and "Activate"
buttons; a failed or interrupted training leaves only a message.
"""

from __future__ import annotations

import streamlit as st

from app_ui import charts
from app_ui.context import ModelContext
from vrvm import dashboard as svc


def _file_id(upload) -> str:
    return str(getattr(upload, "file_id", None) or f"{upload.name}:{upload.size}")


# ------------------------------------------------------------------------ trip store
def store_panel(key: str, ctx: ModelContext) -> None:
    store = svc.trip_store(ctx.home)
    summary = store.summary()
    cols = st.columns(4)
    cols[0].metric("Trips in the store", f"{summary.n_trips:,}")
    cols[1].metric("Batches", summary.n_parts)
    cols[2].metric("Size on disk", f"{summary.size_bytes / 2**20:.1f} MB")
    if summary.start_min is not None:
        days = (summary.start_max - summary.start_min).total_seconds() / 86400
        cols[3].metric("Days covered", f"{days:.0f}")
        st.caption(
            f"Trips from {summary.start_min:%Y-%m-%d %H:%M} to {summary.start_max:%Y-%m-%d %H:%M}"
            f" ({summary.tz})."
        )
    else:
        cols[3].metric("Days covered", "-")
    if summary.synthetic:
        st.caption(":material/science: The store holds synthetic demo trips (Synthetica).")
    if summary.n_parts:
        with st.expander("Batches in the store"):
            parts = store.parts()
            parts["added_utc"] = parts["added_utc"].astype(str)
            st.dataframe(parts, hide_index=True, key=f"{key}_parts", width="stretch")
    left, right = st.columns(2)
    with left:
        if st.button(
            "Add 2,000 synthetic demo trips",
            key=f"{key}_demo",
            help="To try the flow without data of your own (labelled synthetic).",
        ):
            added = store.add(svc.demo_upload_trips(), synthetic=True)
            st.session_state[f"{key}_published"] = (
                f"Added {added.n_added:,} synthetic demo trips "
                f"({added.n_duplicates:,} already in the store)."
            )
            st.rerun()
    with right, st.popover("Clear the store…", disabled=summary.n_trips == 0):
        st.write(f"Delete all {summary.n_trips:,} stored trips? Models are not affected.")
        if st.button("Delete all stored trips", key=f"{key}_clear", type="primary"):
            removed = store.clear()
            st.session_state[f"{key}_published"] = f"Deleted {removed:,} trips from the store."
            st.rerun()


# ------------------------------------------------------------------------ uploads
def _mapping_form(key: str, fid: str, outcome: svc.UploadOutcome) -> None:
    st.warning(
        f"**{outcome.name}**: the columns do not match a known export. Name them below.",
        icon=":material/table_edit:",
    )
    guess = svc.guess_column_map(outcome.columns)
    choices = ["", *outcome.columns]
    with st.form(f"{key}_form_{fid}"):
        mapping = {}
        cols = st.columns(2)
        for i, (role, label) in enumerate(svc.MAPPING_ROLES):
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


def _report(key: str, fid: str, outcome: svc.UploadOutcome, data: bytes) -> None:
    report = outcome.report
    cols = st.columns(3)
    cols[0].metric("Rows read", f"{report.n_input:,}")
    cols[1].metric("Kept", f"{report.n_kept:,}")
    cols[2].metric("Dropped", f"{report.dropped:,}")
    st.caption(
        f"Schema: {report.schema} · times read in {report.tz}"
        + (f" · {report.n_empty_rows:,} empty rows skipped" if report.n_empty_rows else "")
    )
    table = svc.report_table(report)
    if len(table):
        st.dataframe(table, hide_index=True, key=f"{key}_report_{fid}", width="stretch")
        examples = svc.example_rows(data, report)
        if len(examples):
            with st.expander("Example rejected rows (as in the file)"):
                st.dataframe(
                    examples, hide_index=True, key=f"{key}_examples_{fid}", width="stretch"
                )
    else:
        st.caption("Every row passed the checks.")


def upload_panel(key: str, ctx: ModelContext) -> None:
    st.session_state.setdefault(f"{key}_reads", {})
    st.session_state.setdefault(f"{key}_maps", {})
    st.session_state.setdefault(f"{key}_added", {})
    uploads = st.file_uploader(
        "Trip files (CSV or Parquet; Chicago, NYC or canonical columns are recognised)",
        type=list(svc.UPLOAD_TYPES),
        accept_multiple_files=True,
        key=f"{key}_upload",
        help=f"Up to {svc.MAX_UPLOAD_MB} MB per file. Files are only parsed as tables: "
        "nothing in them is executed.",
    )
    reads = st.session_state[f"{key}_reads"]
    added = st.session_state[f"{key}_added"]
    store = svc.trip_store(ctx.home)
    for upload in uploads or []:
        fid = _file_id(upload)
        data = upload.getvalue()
        if fid not in reads:
            reads[fid] = svc.read_upload(
                upload.name, data, column_map=st.session_state[f"{key}_maps"].get(fid)
            )
        outcome: svc.UploadOutcome = reads[fid]
        with st.container(border=True):
            st.markdown(f"**{upload.name}** · {len(data) / 2**20:.2f} MB")
            if outcome.needs_mapping:
                _mapping_form(key, fid, outcome)
                continue
            if outcome.report is not None:
                _report(key, fid, outcome, data)
            if outcome.error:
                st.error(outcome.error, icon=":material/block:")
                continue
            far = svc.distance_to_store_km(store, outcome.trips) if fid not in added else None
            if far is not None and far > 100:
                st.warning(
                    f"These trips are {far:,.0f} km from the trips already in the store: "
                    "another city? A model trained on both spreads its zones over everything "
                    "in between. Clear the store first unless this is intended.",
                    icon=":material/travel_explore:",
                )
            if fid in added:
                st.success(added[fid], icon=":material/check_circle:")
            elif st.button(
                f"Add {len(outcome.trips):,} trips to the store",
                key=f"{key}_add_{fid}",
                type="primary",
            ):
                result = store.add(outcome.trips, source=upload.name)
                added[fid] = (
                    f"Added {result.n_added:,} new trips to the store; "
                    f"{result.n_duplicates:,} were already there."
                )
                st.rerun()


# ------------------------------------------------------------------------ training
def _settings_form(key: str, options: list[dict]) -> tuple[svc.TrainingSettings, list[str]] | None:
    with st.form(f"{key}_settings"):
        cols = st.columns(4)
        n_members = cols[0].number_input("Ensemble members", 1, 32, 4, key=f"{key}_members")
        widths = cols[1].text_input(
            "Kernel widths",
            "auto",
            key=f"{key}_widths",
            help="'auto' (chosen by the evidence) or numbers such as '1.5, 3'",
        )
        max_basis = cols[2].number_input(
            "Max basis functions", 20, 5000, 500, step=50, key=f"{key}_max_basis"
        )
        holdout = cols[3].slider("Hold-out share", 0.05, 0.5, 0.2, 0.05, key=f"{key}_holdout")
        split = st.radio(
            "Hold out",
            ["random", "latest"],
            format_func={"random": "a random share", "latest": "the most recent trips"}.get,
            horizontal=True,
            key=f"{key}_split",
        )
        # ---- how to produce the candidate ------------------------------------------
        # "Full retrain" always; "Update with new trips (fast)" appears as soon as
        # TravelTimeModel.update exists (see vrvm.dashboard.retrain_options).
        st.markdown("**Candidate models**")
        chosen = []
        option_cols = st.columns(len(options))
        for column, option in zip(option_cols, options, strict=True):
            ticked = column.checkbox(
                option["label"],
                value=option["available"],  # both, when both exist: compare before publishing
                disabled=not option["available"],
                help=option["help"]
                if option["available"]
                else option["help"] + " Not available in this version of vrvm yet.",
                key=f"{key}_option_{option['key']}",
            )
            if ticked and option["available"]:
                chosen.append(option["key"])
        submitted = st.form_submit_button("Train and evaluate", type="primary")
    if not submitted:
        return None
    try:
        settings = svc.TrainingSettings(
            n_members=int(n_members),
            kernel_widths=svc.parse_widths(widths),
            max_basis=int(max_basis),
            holdout_fraction=float(holdout),
            holdout_split=split,
            n_jobs=svc.demo_settings().n_jobs,
        )
    except ValueError as exc:
        st.error(str(exc))
        return None
    if not chosen:
        st.error("Tick at least one way to produce a candidate model.")
        return None
    return settings, chosen


def train_panel(key: str, ctx: ModelContext) -> None:
    store = svc.trip_store(ctx.home)
    n_stored = len(store)
    options = svc.retrain_options()
    form = _settings_form(key, options)
    if n_stored == 0:
        st.info(
            "The trip store is empty: upload trip files (or add the synthetic demo trips) first."
        )
        return
    if form is None:
        return
    settings, chosen = form
    trips = store.load()
    new_trips = None
    if svc.RETRAIN_UPDATE in chosen:
        created = next(
            (v.created for v in svc.model_store(ctx.home).versions() if v.version == ctx.version),
            None,
        )
        new_trips = store.load(added_after=created) if created is not None else trips
    st.session_state.pop(f"{key}_result", None)
    with st.status(f"Training on {len(trips):,} stored trips", expanded=True) as status:
        bars: dict[str, object] = {}

        def progress(option: str, done: int, total: int, elapsed: float) -> None:
            if option not in bars:
                bars[option] = st.progress(0.0)
            bars[option].progress(
                done / total, text=f"{option}: member {done} of {total} done ({elapsed:.0f} s)"
            )

        try:
            result = svc.run_retrain(
                trips,
                settings,
                options=chosen,
                active=ctx.model,
                active_version=ctx.version,
                new_trips=new_trips,
                progress=progress,
            )
        except ValueError as exc:
            status.update(label="Training failed; the active model is unchanged", state="error")
            st.error(str(exc))
            return
        for name, message in result.errors.items():
            st.error(f"{name} failed: {message}")
        state = "complete" if result.candidates else "error"
        status.update(
            label=f"Trained {len(result.candidates)} candidate(s); "
            f"scored on {len(result.holdout):,} hold-out trips",
            state=state,
        )
    st.session_state[f"{key}_result"] = result


def evaluation_panel(key: str, ctx: ModelContext) -> None:
    result: svc.RetrainResult | None = st.session_state.get(f"{key}_result")
    if result is None or not result.candidates:
        return
    st.subheader("Hold-out evaluation")
    st.caption(
        f"All models scored on the same {len(result.holdout):,} hold-out trips, which no "
        "candidate saw in training (the active model may have, if they were in its data)."
    )
    if result.active_name and not result.comparable:
        st.warning(
            "The active model was trained on another area: its scores on these trips "
            "are not comparable."
        )
    table = svc.metrics_table(result.metrics)
    st.dataframe(table.round(3), key=f"{key}_metrics", width="stretch")
    models = {**result.candidates}
    if result.active_name:
        models[result.active_name] = ctx.model
    frames = {name: svc.predicted_vs_observed(m, result.holdout) for name, m in models.items()}
    curves = {name: svc.calibration_curve(m, result.holdout) for name, m in models.items()}
    pits = {name: svc.pit_frame(result.metrics[name]) for name in models}
    left, right = st.columns(2)
    left.plotly_chart(
        charts.predicted_vs_observed_figure(frames), key=f"{key}_pvo", width="stretch"
    )
    right.plotly_chart(charts.calibration_figure(curves), key=f"{key}_calibration", width="stretch")
    st.plotly_chart(charts.pit_figure(pits), key=f"{key}_pit", width="stretch")

    st.subheader("Publish")
    for name in result.candidates:
        crps = (result.metrics.get(name) or {}).get("crps_s")
        label = f"Publish “{name}” as the new active model"
        if crps is not None:
            label += f" (hold-out CRPS {crps / 60:.2f} min)"
        if st.button(label, key=f"{key}_publish_{name}", type="primary"):
            version = svc.publish_candidate(ctx.home, result, name)
            st.session_state.pop(f"{key}_result", None)
            st.session_state[f"{key}_published"] = (
                f"Published version {version} and made it active. The Predict page now uses it."
            )
            st.rerun()


def versions_panel(key: str, ctx: ModelContext) -> None:
    store = svc.model_store(ctx.home)
    table = svc.versions_table(store)
    st.dataframe(table, hide_index=True, key=f"{key}_versions", width="stretch")
    others = [int(v) for v in table["version"] if int(v) != ctx.version]
    if not others:
        return
    left, right = st.columns([2, 1])
    choice = left.selectbox("Re-activate a previous version", others, key=f"{key}_activate_choice")
    right.write("")
    if right.button("Activate", key=f"{key}_activate"):
        store.activate(int(choice))
        st.session_state[f"{key}_published"] = f"Version {choice} is active again."
        st.rerun()


def show_message(key: str) -> None:
    message = st.session_state.pop(f"{key}_published", None)
    if message:
        st.success(message, icon=":material/check_circle:")
