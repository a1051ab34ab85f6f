"""parl_algorithms."""

__version__ = "3.0.0"
