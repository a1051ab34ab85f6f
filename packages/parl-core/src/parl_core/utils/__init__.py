"""PARL utilities: returns / GAE, model checks, logging, tensorboard summary, replay memory, schedulers."""

from parl_core.utils.model_check import check_model_method
from parl_core.utils.returns import calc_discount_sum_rewards, calc_gae, compute_gae, discounted_returns

__all__ = [
    "calc_discount_sum_rewards",
    "calc_gae",
    "check_model_method",
    "compute_gae",
    "discounted_returns",
]
