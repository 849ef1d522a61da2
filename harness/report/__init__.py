"""``harness report OUTDIR``: a static HTML report of a store, fast at any size (:func:`build_report`).

The page is assembled in :mod:`.build`; its parts: the HTML tables (:mod:`.tables_html`), the SVG
charts (:mod:`.charts`), the power, cost and provenance sections (:mod:`.sections`), the sequential
comparisons (:mod:`.sequential`), the checkpoint sweeps (:mod:`.sweep`), an experiment's joint
diagnostics (:mod:`.joint`), the episode browser's data (:mod:`.episodes`) and the page template
(:mod:`.page`)."""

from harness.report.build import build_report

__all__ = ["build_report"]
