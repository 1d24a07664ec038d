"""``python -m stablehlo_conform.cli``."""

from . import main

main()
