"""A fitted VRVMRegressor as JSON metadata and plain arrays, and back (no pickle).

What :meth:`VRVMRegressor.export_state <vrvm.engine.regressor.VRVMRegressor.export_state>`
writes and :meth:`~vrvm.engine.regressor.VRVMRegressor.from_state` reads: the
parameters, the fitted scalars and arrays, and the compact predictive model
(:class:`~vrvm.engine.predictor.Predictor`); :mod:`vrvm.trips.store.model_dir` stores them.
"""

from __future__ import annotations

import numpy as np

from vrvm.engine.kernels import BasisSpec
from vrvm.engine.predictor import Predictor

__all__ = ["STATE_ARRAYS", "STATE_SCALARS", "export_state", "restore_state"]

STATE_ARRAYS = (
    "active_",
    "coef_",
    "alpha_",
    "relevance_indices_",
    "relevance_vectors_",
    "basis_centre_index_",
    "basis_width_",
    "kernel_widths_",
    "elbo_",
    "centre_indices_",
)
STATE_SCALARS = (
    "n_features_in_",
    "n_linear_",
    "n_relevance_",
    "e_",
    "f_",
    "noise_std_",
    "log_evidence_",
    "n_iter_",
    "converged_",
    "stop_reason_",
    "n_updates_",
)


def _plain(value):
    """numpy scalars -> Python scalars for JSON."""
    return value.item() if isinstance(value, np.generic) else value


def export_state(model) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, arrays) of a fitted regressor."""
    params = model.get_params()
    del params["n_reserve"]  # a fitting option of the first stage, not of the state
    if not (params["random_state"] is None or isinstance(params["random_state"], int)):
        params["random_state"] = None
    params["kernel_widths"] = (
        params["kernel_widths"]
        if isinstance(params["kernel_widths"], str)
        else np.atleast_1d(params["kernel_widths"]).tolist()
    )
    pred = model._predictor
    meta = {
        "params": params,
        "fitted": {k: _plain(getattr(model, k)) for k in STATE_SCALARS},
        "predictor": {
            "e": pred.e,
            "f": pred.f,
            "beta_w": pred.beta_w,
            "family": pred.family,
            "y_scale": pred.y_scale,
            "mode": pred.basis.mode,
            "n_linear": pred.basis.n_linear,
        },
    }
    arrays = {k: np.asarray(getattr(model, k)) for k in STATE_ARRAYS}
    arrays.update(
        basis_centres=pred.basis.centres,
        basis_widths=pred.basis.widths,
        basis_columns=pred.columns,
        chol=pred.chol,
        mean=pred.mean,
    )
    return meta, arrays


def restore_state(cls, meta: dict, arrays: dict):
    """A fitted ``cls`` (VRVMRegressor) from :func:`export_state` output; ValueError if
    the state is incomplete or inconsistent."""
    try:
        model = cls(**meta["params"])
        for key in STATE_SCALARS:
            value = meta["fitted"].get(key, 0) if key == "n_updates_" else meta["fitted"][key]
            setattr(model, key, value)
        for key in STATE_ARRAYS:
            setattr(model, key, np.asarray(arrays[key]))
        p = meta["predictor"]
        basis = BasisSpec(
            centres=arrays["basis_centres"],
            widths=arrays["basis_widths"],
            mode=p["mode"],
            n_linear=int(p["n_linear"]),
        )
        model._predictor = Predictor(
            basis=basis,
            columns=np.asarray(arrays["basis_columns"], dtype=np.intp),
            chol=np.asarray(arrays["chol"], dtype=np.float64),
            mean=np.asarray(arrays["mean"], dtype=np.float64),
            e=float(p["e"]),
            f=float(p["f"]),
            beta_w=float(p["beta_w"]),
            family=p["family"],
            y_scale=float(p["y_scale"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"invalid VRVMRegressor state: {exc!r}") from None
    return model
