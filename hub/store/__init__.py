"""The hub's state store: the Store interface and its embedded SQLite back end."""

from hub.api.selectors import (
    LabelSelector,
    LabelSelectorError,
    Requirement,
    parse_label_selector,
    selector_matches,
)
from hub.store.interface import (
    AlreadyExists,
    BulkWrites,
    ConcurrentWrites,
    Conflict,
    EventType,
    Gone,
    InvalidObject,
    NotFound,
    Object,
    ObjectKey,
    ObjectList,
    Refused,
    Selector,
    Store,
    StoreError,
    Watch,
    WatchEvent,
)
from hub.store.sqlite import SQLiteStore
from hub.store.sqlite_schema import SCHEMA_VERSION, SchemaTooNew
from hub.store.sqlite_watch import SQLiteWatch

__all__ = [
    "SCHEMA_VERSION",
    "AlreadyExists",
    "BulkWrites",
    "ConcurrentWrites",
    "Conflict",
    "EventType",
    "Gone",
    "InvalidObject",
    "LabelSelector",
    "LabelSelectorError",
    "NotFound",
    "Object",
    "ObjectKey",
    "ObjectList",
    "Refused",
    "Requirement",
    "SQLiteStore",
    "SQLiteWatch",
    "SchemaTooNew",
    "Selector",
    "Store",
    "StoreError",
    "Watch",
    "WatchEvent",
    "parse_label_selector",
    "selector_matches",
]
