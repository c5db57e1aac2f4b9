"""Who may do what: roles, analysts' sign-in, the audit record, security settings.

:mod:`~vrvm.services.access.policy` (the viewer and analyst roles, ``decide_access``,
the passphrase check and its throttle, ``record`` into the audit log) and
:mod:`~vrvm.services.access.settings` (the API token, the analyst passphrase or its hash,
the analyst list and private mode, read from the environment and failing closed).
"""
