"""Helpers of the model-directory and model-store tests: tiny models saved and read back,
and travel-time model directories as older format versions wrote them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vrvm.trips.model.model_format import FORMAT_NAME, FORMAT_VERSION
from vrvm.trips.store.model_dir import ModelFormatError, load_model_dir, save_model_dir

FORMAT = "test-model"


def _save(path: Path, *, tag: str = "a", version: int = 1) -> Path:
    return save_model_dir(
        path,
        metadata={"tag": tag},
        arrays={"w": np.full(3, ord(tag[0]), dtype=np.float64)},
        format_name=FORMAT,
        format_version=version,
    )


def _load(path: Path, max_version: int = 1):
    return load_model_dir(path, format_name=FORMAT, max_format_version=max_version)


def _tag(path: Path) -> str:
    metadata, arrays = _load(path)
    assert arrays["w"][0] == ord(metadata["tag"][0])  # metadata and arrays belong together
    return metadata["tag"]


def _raises_format_error(path: Path, match: str | None = None):
    """Context manager: ModelFormatError whose message names ``path`` (and ``match``)."""

    class _Check:
        def __enter__(self):
            self._ctx = pytest.raises(ModelFormatError, match=match)
            self.info = self._ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self._ctx.__exit__(*exc)
            assert str(path) in str(self.info.value), str(self.info.value)
            return suppressed

    return _Check()


def save_without(path: Path, key: str, prefix: str, version: int, out: Path) -> tuple:
    """The model directory ``path`` written to ``out`` as format ``version``, without
    the metadata ``key`` and the arrays ``{prefix}__*`` that format added; returns the
    metadata and arrays written."""
    meta, arrays = load_model_dir(path, format_name=FORMAT_NAME, max_format_version=FORMAT_VERSION)
    meta.pop(key)
    arrays = {name: value for name, value in arrays.items() if not name.startswith(f"{prefix}__")}
    save_model_dir(
        out, metadata=meta, arrays=arrays, format_name=FORMAT_NAME, format_version=version
    )
    return meta, arrays


def save_orphan_array(meta: dict, arrays: dict, name: str, value: np.ndarray, out: Path) -> None:
    """``meta`` and ``arrays`` with one more array ``name`` (whose metadata ``meta``
    lacks), written to ``out`` in the current format."""
    save_model_dir(
        out,
        metadata=meta,
        arrays={**arrays, name: value},
        format_name=FORMAT_NAME,
        format_version=FORMAT_VERSION,
    )
