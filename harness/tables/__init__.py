"""Tables from stored runs: which runs a table shows (:mod:`.selection`), the transfer and
breakdown tables (:mod:`.build`; their column vocabulary :mod:`.columns`, what a cell averages
over :mod:`.units`, the paired-statistics and repeat columns :mod:`.paired`), their text forms
(:mod:`.render`), JSON, caveats, joint diagnostics and
transfer, experiments' headlines, checkpoint sweeps and exports."""
