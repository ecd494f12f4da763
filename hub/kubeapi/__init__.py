"""Kubernetes API server front end (reserved room; nothing lives here yet).

Planned: serve Kueue's kinds over the Kubernetes REST API. It may import hub.api,
hub.store, hub.controllers and hub.service helpers; the engine only through the
controllers (import contracts in pyproject.toml).
"""
