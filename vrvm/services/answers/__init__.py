"""Answers for trips: one trip, many trips, when to leave, matrices, a server's model.

:mod:`~vrvm.services.answers.forecast` (one trip's whole answer, ``answer_od``),
:mod:`~vrvm.services.answers.indices` (reliability indices),
:mod:`~vrvm.services.answers.summaries` (many trips in one model call),
:mod:`~vrvm.services.answers.schedule` (arrive-by and departure windows),
:mod:`~vrvm.services.answers.matrix` (OD matrices in batches),
:mod:`~vrvm.services.answers.predictions` (a file of queries) and
:mod:`~vrvm.services.answers.live` (the model a server answers with, swapped whole).
"""
