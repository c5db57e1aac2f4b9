"""vrvm over HTTP: ``vrvm serve`` answers dispatch and planning systems (see ``docs/api.md``).

:func:`create_app` builds the ASGI application from :class:`ApiSettings`; the package
sits beside :mod:`vrvm.cli` above the services, and never writes to a store.
"""

from vrvm.api.app import ApiSettings, create_app

__all__ = ["ApiSettings", "create_app"]
