"""The oracle: exact values of element-wise math ops, and the accuracy of backends against them.

:mod:`.exact` evaluates an op's mathematical value in arbitrary precision (mpmath) and rounds it
correctly into any float type; :mod:`.accuracy` measures a backend's max ULP error and share of
correctly rounded results per op and element type (``conform accuracy``).
"""

from .exact import DEFINED_OPS, COMPLEX_OPS, correctly_rounded, spec_silent, ulp_error

__all__ = ["COMPLEX_OPS", "DEFINED_OPS", "correctly_rounded", "spec_silent", "ulp_error"]
