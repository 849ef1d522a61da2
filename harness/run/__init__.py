"""Running episodes: the runner, the executors that hold suites and agents (local, process, Ray)
and their built-in declarations, the checks each record passes, artifacts, the composed run
config and provenance, the policy servers an experiment starts, trackers and their built-in
declarations, and the checkpoint sweep."""
