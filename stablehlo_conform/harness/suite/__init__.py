"""Test suites: the tests a file holds, running one of them, and running many in worker
processes (:mod:`.runner`).

Sits above :mod:`..judge`.
"""
