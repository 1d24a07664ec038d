"""pytest plugin (placeholder until the pytest integration lands)."""
