"""The analyst's flow: uploads, the trip store, retraining, evaluation, the demo.

:mod:`~vrvm.services.analyst.uploads` (uploaded files read and cleaned, recipes kept),
:mod:`~vrvm.services.analyst.store_admin` (every change to the trip store),
:mod:`~vrvm.services.analyst.retrain` and :mod:`~vrvm.services.analyst.evaluation`
(candidates trained or updated, scored on one hold-out beside the active model),
:mod:`~vrvm.services.analyst.area_check` (trips of another city refused),
:mod:`~vrvm.services.analyst.demo` (the synthetic city's model on first start) and
:mod:`~vrvm.services.analyst.relevance` (what the model learned).
"""
