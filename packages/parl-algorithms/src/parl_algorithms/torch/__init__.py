"""Torch implementations of the PARL algorithms (imported lazily by ``parl_algorithms``)."""
