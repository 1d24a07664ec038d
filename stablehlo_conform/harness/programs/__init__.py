"""What a test program brings besides its ops: seeded inputs, model recipes, the float64
shadow, FileCheck expectations, IREE's lit programs and whether this package supports it.

Sits above :mod:`..records`, beside :mod:`..backends` and :mod:`..reports`.
"""
