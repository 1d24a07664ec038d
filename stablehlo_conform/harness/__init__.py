"""Running test programs and comparing results."""
