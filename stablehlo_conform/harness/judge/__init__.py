"""Judging values: who is right when a check fails (:mod:`.verdict`), several backends on
one program (:mod:`.diff`), whole models against their precision (:mod:`.model`), and
decompositions by their identities.

Sits above :mod:`..backends` and :mod:`..programs`.
"""
