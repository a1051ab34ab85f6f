"""parl_remote."""

__version__ = "3.0.0"
