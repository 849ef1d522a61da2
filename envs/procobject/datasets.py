"""``harness fetch procobject``: the hub dataset BrightGuo/ProcObject-10K, laid out as
:mod:`envs.procobject.data` reads it (``data/testing.json``; videos at ``videos/<video_path>``
or ``<video_path>``).

The repository's files are placed as the hub holds them. Confirmed: the test file's path
relative to the release (``data/testing.json``, read by the project page's tools). Not confirmed
here: the hub repository's own layout (its listing was not readable in this build) and where its
videos sit. A fetch without ``data/testing.json`` is refused with one line. The suite plugin
lists :data:`PROCOBJECT_DATASET` in its ``datasets``.
"""

from harness.registry.datasets import Dataset

PROCOBJECT_DATASET = Dataset(
    "procobject", "BrightGuo/ProcObject-10K", required=("data/testing.json",),
    description="ProcObject-10K: the test split (data/testing.json, 1,050 questions) and the videos the "
                "release ships; suite=procobject")
