"""Anytime-valid sequential comparisons (docs/sequential.md).

:mod:`harness.stats.sequential.betting`: the betting confidence sequences and the decisions
(numpy only); :mod:`harness.stats.sequential.racing`: the race of several variants (successive
elimination, checkpoint selection); :mod:`harness.stats.sequential.stopping`: ``stopping=sequential``
on stored runs (settings, paired values in the comparison's seeded order, alpha shared by a
group's comparisons, the lines tables print); :mod:`harness.stats.sequential.design`: the bounded
(group-sequential) design; :mod:`harness.stats.sequential.order`: the seeded order of the pairs.
"""

from harness.stats.sequential.betting import (  # noqa: F401 (the package's names)
    BETTING_RULES,
    DEFAULT_RULE,
    GROUP_SEQUENTIAL,
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
    rescale,
)
from harness.stats.sequential.racing import Elimination, eliminate, race  # noqa: F401
from harness.stats.sequential.design import (  # noqa: F401
    DEFAULT_SPENDING,
    check_spending,
    decide_bounded,
)
from harness.stats.sequential.stopping import (  # noqa: F401
    FAMILIES,
    IDENTITY_KEYS,
    ORDER_KEY,
    Comparison,
    SequentialStopping,
    compare,
    decide_family,
    decide_pairs,
    describe,
    identity_entry,
    paired_differences,
    paired_values,
    stopping_of,
    stored_comparisons,
    tested_metric,
)
