"""PARL's module path ``parl.utils.rl_utils``: ``calc_discount_sum_rewards``, ``calc_gae``.

Both are defined in :mod:`parl_core.utils.returns`.
"""

from parl_core.utils.returns import calc_discount_sum_rewards, calc_gae

__all__ = ["calc_discount_sum_rewards", "calc_gae"]
