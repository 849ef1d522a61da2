"""``harness fetch cfg_bench``: the hub dataset CFG-Bench/CFG-Bench, laid out as
:mod:`envs.cfg_bench.data` reads it (``qa_pairs.json``, ``caption.json``, ``videos/`` at the top
of the data folder, as the originals' scripts read them from their working folder).

The repository's files are placed as the hub holds them (``hub_dest`` ""). Confirmed: the
dataset's id (the originals' README) and the file names their scripts read. Not confirmed here:
that the hub repository holds those files at its top level (its listing was not readable in this
build), and the videos, which its authors hand out on request (put them in ``<folder>/videos``).
A fetch whose result has no ``qa_pairs.json`` or ``caption.json`` is refused with one line.
The suite plugin lists :data:`CFG_BENCH_DATASET` in its ``datasets``.
"""

from harness.registry.datasets import Dataset

CFG_BENCH_DATASET = Dataset(
    "cfg_bench", "CFG-Bench/CFG-Bench", required=("qa_pairs.json", "caption.json"),
    description="CFG-Bench: question items (qa_pairs.json) and video captions for the judge (caption.json); "
                "videos on request from the authors, placed in videos/; suite=cfg_bench")
