"""Statistics over paired episodes: fixed-sample paired deltas, bootstrap and repeat intervals
(:mod:`.paired`), and the sequential decisions of ``stopping=sequential`` (:mod:`.sequential`)."""
