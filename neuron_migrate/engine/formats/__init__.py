"""engine/formats."""
