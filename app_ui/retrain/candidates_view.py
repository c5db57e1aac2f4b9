"""Candidate models: the training form, the hold-out comparison and publishing.

State keys (prefixed with the component's ``key``): the form's widgets (``{key}_name``,
``{key}_members``, ``{key}_widths``, ``{key}_max_basis``, ``{key}_holdout``,
``{key}_split``, ``{key}_option_<option>``), ``{key}_name_default`` (the suggested name
the name field was last reset to), ``{key}_last_settings`` (the last submitted form),
``{key}_result`` (the last :class:`vrvm.services.analyst.retrain.RetrainResult`, unpublished),
``{key}_new_model`` (the button that trains a refused update's trips as a new model,
through ``{key}_retry_full``) and the publish buttons.

Nothing here changes the active model except the explicit "Publish" button; a failed or
interrupted training leaves only a message.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from app_ui import charts, messages
from app_ui.context import ModelContext
from vrvm.services.analyst import demo, retrain
from vrvm.services.display import units
from vrvm.services.display.progress import TimeLeft
from vrvm.services.display.text import plain_markdown
from vrvm.services.versions import models


def _name_field(key: str, default: str) -> str:
    """The model-name field, reset to ``default`` whenever the suggestion changes."""
    if st.session_state.get(f"{key}_name_default") != default:
        st.session_state[f"{key}_name_default"] = default
        st.session_state[f"{key}_name"] = default
    return st.text_input(
        "Model name",
        key=f"{key}_name",
        max_chars=100,
        help="A city or data set, shown in every caption instead of file names. A full "
        "retrain takes this name; an update keeps the active model's.",
    )


def _settings_form(
    key: str, default_name: str
) -> tuple[retrain.TrainingSettings, list[str]] | None:
    with st.form(f"{key}_settings"):
        name = _name_field(key, default_name)
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
        st.markdown("**Candidate models**")
        chosen = []
        option_cols = st.columns(len(retrain.RETRAIN_OPTIONS))
        for column, option in zip(option_cols, retrain.RETRAIN_OPTIONS, strict=True):
            # both by default: compare them before publishing one
            if column.checkbox(
                option["label"],
                value=True,
                help=option["help"],
                key=f"{key}_option_{option['key']}",
            ):
                chosen.append(option["key"])
        submitted = st.form_submit_button("Train and evaluate", type="primary")
    if not submitted:
        return None
    try:
        settings = retrain.TrainingSettings(
            name=name.strip() or None,
            n_members=int(n_members),
            kernel_widths=retrain.parse_widths(widths),
            max_basis=int(max_basis),
            holdout_fraction=float(holdout),
            holdout_split=split,
            n_jobs=demo.demo_settings().n_jobs,
        )
    except ValueError as exc:
        st.error(str(exc))
        return None
    if not chosen:
        st.error("Tick at least one way to produce a candidate model.")
        return None
    return settings, chosen


def train_panel(key: str, ctx: ModelContext, *, n_stored: int) -> None:
    """The form; on submit, train the candidates and score them beside the active model.

    After a refused update, the "new model" button of :func:`evaluation_panel` trains
    the same form's full retrain here (with the name in the name field).
    """
    retry = st.session_state.pop(f"{key}_retry_full", False)
    form = _settings_form(key, retrain.suggest_model_name(ctx.home, ctx.model))
    if n_stored == 0:
        st.info(
            "The trip store is empty: upload trip files (or add the synthetic demo trips) first."
        )
        return
    if form is None and retry and f"{key}_last_settings" in st.session_state:
        name = (st.session_state.get(f"{key}_name") or "").strip() or None
        settings = dataclasses.replace(st.session_state[f"{key}_last_settings"], name=name)
        form = settings, [retrain.RETRAIN_FULL]
    if form is None:
        return
    settings, chosen = form
    st.session_state[f"{key}_last_settings"] = settings
    st.session_state.pop(f"{key}_result", None)
    with st.status(f"Training on {n_stored:,} stored trips", expanded=True) as status:
        bars: dict[str, tuple[object, TimeLeft]] = {}

        def progress(option: str, done: int, total: int, elapsed: float, phase: str) -> None:
            if option not in bars:
                bars[option] = st.progress(0.0), TimeLeft()
            bar, time_left = bars[option]
            label = next(
                (o["label"] for o in retrain.RETRAIN_OPTIONS if o["key"] == option), option
            )
            text = time_left.say(done, total, elapsed, phase, what=label)
            bar.progress(min(done / max(total, 1), 1.0), text=text)

        try:
            result = retrain.train_candidates(
                ctx.home,
                settings,
                chosen,
                active=ctx.model,
                active_version=ctx.version,
                progress=progress,
                by=ctx.access,
            )
        except ValueError as exc:
            status.update(label="Training failed; the active model is unchanged", state="error")
            st.error(str(exc))
            return
        refused = result.refused_update.reason if result.refused_update else None
        for name, message in result.errors.items():
            if message != refused:  # shown with its way out by evaluation_panel
                st.error(f"{plain_markdown(name)} failed: {plain_markdown(message)}")
        status.update(
            label=f"Trained {len(result.candidates)} candidate(s); scored on {_scored(result)}",
            state="complete" if result.candidates else "error",
        )
    st.session_state[f"{key}_result"] = result


def _scored(result: retrain.RetrainResult) -> str:
    """The hold-out trips the scores are of, in words."""
    if result.n_scored < len(result.holdout):
        return (
            f"uniform sample of {result.n_scored:,} of the {len(result.holdout):,} hold-out trips"
        )
    return f"{len(result.holdout):,} hold-out trips"


def _refusal(key: str, result: retrain.RetrainResult) -> None:
    """A refused update: why, with the numbers, and a full retrain as a new model."""
    check = result.refused_update
    if check is None:
        return
    st.error(
        f"**The update was refused.** {plain_markdown(check.reason)}",
        icon=":material/wrong_location:",
    )
    if "train" in result.kinds.values():
        st.info(
            "The full retrain below is a new model of its own: publishing it makes it the "
            "active model, and the current one stays under *Model versions*.",
            icon=":material/add_location_alt:",
        )
    elif st.button(
        "Train a new model on these trips (full retrain)", key=f"{key}_new_model", type="primary"
    ):
        st.session_state[f"{key}_retry_full"] = True
        st.rerun()


def evaluation_panel(key: str, ctx: ModelContext) -> None:
    """The candidates and the active model on the same hold-out trips, and publishing."""
    result: retrain.RetrainResult | None = st.session_state.get(f"{key}_result")
    if result is None:
        return
    _refusal(key, result)
    if not result.candidates:
        return
    st.subheader("Hold-out evaluation")
    st.caption(
        f"All models scored on the same {_scored(result)}, which no candidate saw in "
        "training (the active model may have, if they were in its data)."
    )
    if result.active_name and not result.comparable:
        st.warning(
            "The active model was trained on another area: its scores on these trips "
            "are not comparable."
        )
    st.dataframe(result.metrics_table().round(3), key=f"{key}_metrics", width="stretch")
    scores = result.scores
    left, right = st.columns(2)
    left.plotly_chart(
        charts.predicted_vs_observed_figure(
            {name: s.predicted_vs_observed for name, s in scores.items()}
        ),
        key=f"{key}_pvo",
        width="stretch",
    )
    right.plotly_chart(
        charts.calibration_figure({name: s.calibration for name, s in scores.items()}),
        key=f"{key}_calibration",
        width="stretch",
    )
    st.plotly_chart(
        charts.pit_figure({name: s.pit for name, s in scores.items()}),
        key=f"{key}_pit",
        width="stretch",
    )

    st.subheader("Publish")
    for name, candidate in result.candidates.items():
        crps = scores[name].metrics.get("crps_s")
        new_model = result.new_area and result.kinds[name] == "train"
        as_what = "a new model" if new_model else "the new active model"
        label = f"Publish “{name}” as {as_what}, “{plain_markdown(models.model_name(candidate))}”"
        if crps is not None:
            label += f" (hold-out CRPS {units.format_metric('crps_s', crps, 'min')})"
        if st.button(label, key=f"{key}_publish_{name}", type="primary"):
            try:
                version = retrain.publish_candidate(ctx.home, result, name, by=ctx.access)
            except models.StoreConflictError as exc:
                st.session_state.pop(f"{key}_result", None)  # scored against an old model
                st.error(plain_markdown(exc) + " Train the candidates again.")
                return
            except models.StoreBusyError as exc:
                st.error(plain_markdown(exc))
                return
            st.session_state.pop(f"{key}_result", None)
            messages.say(
                f"Published version {version} and made it active. The Predict page now uses it."
            )
            st.rerun()
