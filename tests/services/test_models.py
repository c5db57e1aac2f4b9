"""Model versions: captions, the versions table."""

from __future__ import annotations

from vrvm.services.models import data_description, is_synthetic, versions_table


def test_data_description_says_synthetic(tiny_model):
    assert is_synthetic(tiny_model)
    text = data_description(tiny_model)
    assert "SYNTHETIC" in text and "3,000 trips" in text


def test_versions_table_of_an_empty_store(tmp_path):
    table = versions_table(tmp_path)
    assert table.empty and "version" in table.columns
