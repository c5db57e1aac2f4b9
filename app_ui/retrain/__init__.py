"""The Retrain page's steps: upload, the trip store, candidates, versions, the audit log, export."""
