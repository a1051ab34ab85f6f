"""parl_monitor."""

__version__ = "3.0.0"
