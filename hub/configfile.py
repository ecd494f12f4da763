"""Reading a Kueue Configuration file (an edge: hub.api only parses the data)."""

from __future__ import annotations

from pathlib import Path

import yaml

from hub.api.config import Configuration, parse_configuration
from hub.api.config_strict import strict_decoding_error
from hub.api.errors import ValidationError
from hub.api.registry import serve_external_frameworks


def load_configuration_file(path: Path | None) -> Configuration:
    """A Kueue Configuration YAML file (None: the defaults); raises ValueError with a one-line reason."""
    if path is None:
        return Configuration()
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read config {path}: {exc}") from None
    if data is not None and not isinstance(data, dict):
        raise ValueError(f"config {path}: a Kueue Configuration must be a mapping")
    refused = strict_decoding_error(data or {})  # Kueue's loader decodes strictly
    if refused is not None:
        raise ValueError(f"config {path}: {refused}")
    try:
        config = parse_configuration(data)
        serve_external_frameworks(config)  # MultiKueue's generic adapter serves their kinds
    except (ValidationError, ValueError) as exc:
        raise ValueError(f"config {path}: {exc}") from None
    return config
