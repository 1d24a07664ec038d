"""Builders of the model zoo's programs (see scripts/export_models.py)."""
