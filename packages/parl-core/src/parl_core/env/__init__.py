"""gymnasium helpers."""
