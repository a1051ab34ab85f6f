"""PARL's module path ``parl.utils.csv_logger``: :class:`CSVLogger` (defined in :mod:`parl_core.utils.stats`)."""

from parl_core.utils.stats import CSVLogger

__all__ = ["CSVLogger"]
