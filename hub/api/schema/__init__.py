"""OpenAPI schemas, CRDs and printer columns of the kinds mkhub serves, built from hub/api.

- :func:`kind_schema` — a Kueue kind's OpenAPI v3 schema in v1beta1 or v1beta2;
- :func:`crd` / :func:`all_crds` / :func:`crd_yaml` — apiextensions.k8s.io/v1 CRDs;
- :func:`printer_columns` / :func:`table_columns` / :func:`row_cells` — Kueue's columns
  and the JSONPath evaluator that renders them for Table output and the CLI.
"""

from .columns import (
    AGE_COLUMN,
    NAME_COLUMN,
    JSONPathError,
    PrinterColumn,
    cell,
    evaluate,
    human_duration,
    printer_columns,
    row_cells,
    table_columns,
)
from .crds import CATEGORIES, KUEUE_KINDS, all_crds, crd, crd_file_name, crd_yaml, has_status
from .versions import STORAGE_VERSION, V1BETA1, V1BETA2, VERSIONS, kind_schema

__all__ = [
    "AGE_COLUMN",
    "CATEGORIES",
    "KUEUE_KINDS",
    "NAME_COLUMN",
    "STORAGE_VERSION",
    "V1BETA1",
    "V1BETA2",
    "VERSIONS",
    "JSONPathError",
    "PrinterColumn",
    "all_crds",
    "cell",
    "crd",
    "crd_file_name",
    "crd_yaml",
    "evaluate",
    "has_status",
    "human_duration",
    "kind_schema",
    "printer_columns",
    "row_cells",
    "table_columns",
]
