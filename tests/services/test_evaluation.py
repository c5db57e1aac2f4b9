"""Models side by side on the same hold-out trips; every score with its unit."""

from __future__ import annotations

import pytest

from vrvm import synthetic_city
from vrvm.services.analyst.evaluation import metrics_table
from vrvm.services.display.units import format_metric, metric_label, metric_value


def test_every_row_of_the_metrics_table_names_its_unit(tiny_model):
    metrics = tiny_model.evaluate(synthetic_city(200, seed=3))
    table = metrics_table({"a": metrics})
    for row in table.index.drop("trips scored"):
        assert row.endswith(("(min)", "(nats)", "(%)")), row
    assert table.loc["CRPS (min)", "a"] == pytest.approx(metrics["crps_s"] / 60)
    assert table.loc["MAE of median (min)", "a"] == pytest.approx(metrics["median"]["mae_s"] / 60)
    assert table.loc["RMSE of median (min)", "a"] == pytest.approx(metrics["median"]["rmse_s"] / 60)
    assert table.loc["NLL (nats)", "a"] == pytest.approx(metrics["nll"])
    cover = next(e for e in metrics["intervals"] if e["level"] == 0.9)
    assert table.loc["90 % interval coverage (%)", "a"] == pytest.approx(100 * cover["coverage"])
    seconds = metrics_table({"a": metrics}, units="s")
    assert seconds.loc["CRPS (s)", "a"] == pytest.approx(metrics["crps_s"])
    with pytest.raises(ValueError, match="units must be 's' or 'min'"):
        metrics_table({"a": metrics}, units="h")


def test_format_metric_for_the_cli():
    assert format_metric("crps_s", 176.83) == "176.8 s"
    assert format_metric("crps_s", 176.83, "min") == "2.95 min"
    assert format_metric("rmse_s", 600, "min") == "10.00 min"
    assert format_metric("nll", 6.1234, "min") == "6.123 nats"  # not a time: unchanged
    assert format_metric("coverage", 0.875) == "87.5 %"
    assert format_metric("mape_pct", 12.34) == "12.3 %"
    assert format_metric("crps_s", None) == "n/a"
    assert format_metric("crps_s", 90, "min", decimals=1) == "1.5 min"
    assert metric_label("mean_width_s", "s") == "interval width (s)"
    assert metric_value("bias_s", -30, "min") == -0.5
    with pytest.raises(ValueError, match="unknown metric 'elbo'"):
        format_metric("elbo", 1.0)
