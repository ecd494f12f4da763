"""The Kubernetes REST API over the Store interface (discovery, CRUD, watch, patch, tables, OpenAPI)."""
