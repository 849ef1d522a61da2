"""The results store: one SQLite file of runs, sessions, episodes, transcripts and judgements,
written crash-safe by one writer, checked and repaired (docs/reliability.md).

The room's modules, each with one job: ``schema`` (tables, columns, the write SQL, storable
values), ``errors`` (:class:`StoreError` and its one-line messages), ``locking`` (one writer at a
time), ``integrity`` (row checksums and the verdict of ``harness store check``), ``header`` (a
private copy of a maybe-damaged file, its header rebuilt), ``opening`` (verify, open, migrate),
``queries`` (the reads' SQL), ``database`` (:class:`ResultStore`), ``writer``
(:class:`RecordWriter`) and ``repair`` (``harness store repair``). Callers import the names
below from ``harness.store``.
"""

from harness.store.database import ResultStore
from harness.store.errors import StoreError, damaged_message
from harness.store.integrity import (DAMAGED, DAMAGED_HEADER, EXIT_STATUS, NOT_A_STORE, SOUND, UNKNOWN_SCHEMA,
                                     UNREADABLE_SCHEMA, UNSALVAGEABLE, Verdict, check_store, inspect_db,
                                     inspect_store)
from harness.store.queries import FAILURE_COUNTS
from harness.store.repair import RepairRefused, RepairReport, repair_store
from harness.store.schema import APPLICATION_ID, STORE_FILENAME
from harness.store.writer import RecordWriter

__all__ = [
    "APPLICATION_ID", "DAMAGED", "DAMAGED_HEADER", "EXIT_STATUS", "FAILURE_COUNTS", "NOT_A_STORE", "SOUND",
    "STORE_FILENAME", "UNKNOWN_SCHEMA", "UNREADABLE_SCHEMA", "UNSALVAGEABLE", "RecordWriter", "RepairRefused",
    "RepairReport", "ResultStore", "StoreError", "Verdict", "check_store", "damaged_message", "inspect_db",
    "inspect_store", "repair_store",
]
