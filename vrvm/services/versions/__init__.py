"""Model versions: names and captions, publishing and activating, exports.

:mod:`~vrvm.services.versions.models` is the one write path for model versions: the
dashboard, ``vrvm train``/``update``/``activate`` and the HTTP API publish, activate and
audit through its functions, with one ``published_by`` format and one audit record
shape. :mod:`~vrvm.services.versions.model_export` exports a version to share.
"""
