"""The PyTorch backend of parl-core: ``Model``, ``Algorithm``, ``Agent``."""

from parl_core.torch.agent import Agent
from parl_core.torch.algorithm import Algorithm
from parl_core.torch.device import on_device, resolve_device
from parl_core.torch.model import Model

__all__ = ["Model", "Algorithm", "Agent", "on_device", "resolve_device"]
