"""The PaddlePaddle backend of parl-core: ``Model``, ``Algorithm``, ``Agent`` (same API as the torch one)."""

from parl_core.paddle.agent import Agent
from parl_core.paddle.algorithm import Algorithm
from parl_core.paddle.model import Model

__all__ = ["Model", "Algorithm", "Agent"]
