"""PARL utilities."""
