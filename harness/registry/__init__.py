"""What is installed: plugins by name (:mod:`.loader`), the catalog of suites, agents, model
backends, executors and trackers (:mod:`.catalog`), optional extras (:mod:`.extras`), the datasets
suites declare for ``harness fetch`` (:mod:`.datasets`) and the generated parameter docs."""
