"""The PyTorch backend of parl-core: ``Model``, ``Algorithm``, ``Agent``."""

from parl_core.torch.agent import Agent
from parl_core.torch.algorithm import Algorithm
from parl_core.torch.model import Model

__all__ = ["Model", "Algorithm", "Agent"]
