"""Records of a run: what one test gave (:class:`~.result.Result`, :class:`~.result.Status`),
the files that hold many (JSON, the ``--jsonl`` stream, shards), and what is read back from
them (gates, triage, backend names).

This wing imports nothing above it: reading or judging a results file never loads MLIR, the
engine, the kernels or a backend.
"""
