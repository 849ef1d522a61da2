"""Anytime-valid sequential comparisons (docs/sequential.md).

:mod:`harness.sequential.betting`: the betting confidence sequences, the decisions and the
race of several variants (numpy only); :mod:`harness.sequential.design`: the bounded
group-sequential design (error spending over a known maximum); :mod:`harness.sequential.stopping`: ``stopping=sequential``
on stored runs (settings, paired values in split order, the comparisons tables print).
"""

from harness.sequential.betting import (  # noqa: F401 (the package's names)
    BETTING_RULES,
    DEFAULT_RULE,
    GRID,
    RULE_VERSION,
    RULES,
    THETA,
    TRUNCATION,
    Decision,
    agrapa_bets,
    confidence_sequence,
    decide,
    first_crossing,
    log_capital,
    plugin_bets,
    race,
    rescale,
)
from harness.sequential.design import (  # noqa: F401
    DEFAULT_SPENDING,
    GROUP_SEQUENTIAL,
    check_spending,
    decide_bounded,
)
from harness.sequential.stopping import (  # noqa: F401
    IDENTITY_KEYS,
    ORDER_KEY,
    Comparison,
    SequentialStopping,
    compare,
    describe,
    paired_differences,
    stopping_of,
    stored_comparisons,
    tested_metric,
)
