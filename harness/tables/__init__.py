"""Tables from stored runs: which runs a table shows (:mod:`.selection`), the transfer and
breakdown tables and their text forms (:mod:`.build`), JSON, caveats, joint diagnostics and
transfer, experiments' headlines, checkpoint sweeps and exports."""
