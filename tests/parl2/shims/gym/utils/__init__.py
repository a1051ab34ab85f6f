"""Test-only ``gym.utils``: only ``seeding`` (see ``tests/parl2/shims/gym``)."""

from gym.utils import seeding  # noqa: F401
