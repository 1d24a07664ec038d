"""Campaigns built on runs: fuzzing, reducing, repro bundles, accuracy tables (sampled and
exhaustive, locally or on a Dask cluster), precision probes and a plugin's whole report.

The top wing of the harness.
"""
