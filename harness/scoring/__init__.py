"""What a record is worth: the error policy every reader shares (:mod:`.policy`), the metrics
suites declare and the record-field ones the core owns, per-group summaries (:mod:`.summaries`)
and the failure taxonomy (:mod:`.failures`).

``Metric``, ``record_metrics`` and ``record_values`` (a plugin's ``values=`` target) are
importable from here, the paths plugin authors use (docs/writing-a-suite.md).
"""

from harness.metric_declaration import Metric
from harness.scoring.policy import record_metrics, record_values

__all__ = ["Metric", "record_metrics", "record_values"]
