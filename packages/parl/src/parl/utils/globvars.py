"""``parl.utils.globvars``: PARL 2.x's ``global_config`` namespace (``from parl.utils import global_config``)."""

from __future__ import annotations

import argparse
import types

from parl_core.utils import logger

__all__ = ["GlobalConfig", "global_config"]


class GlobalConfig(types.SimpleNamespace):
    """A namespace for a program's global settings::

    from parl.utils import global_config as config
    config.batch_size = 18
    config.load_argument(parser.parse_args())
    """

    def load_argument(self, args: argparse.Namespace) -> None:
        """Copy every attribute of ``args`` into this namespace (a warning names each one overwritten).

        Raises:
            TypeError: ``args`` is not an ``argparse.Namespace``.
        """
        if not isinstance(args, argparse.Namespace):
            raise TypeError(f"load_argument takes an argparse.Namespace (parser.parse_args()), not {type(args)}")
        for key, value in vars(args).items():
            if hasattr(self, key):
                logger.warning("Attribute %s in global_config will be overwritten!", key)
            setattr(self, key, value)


#: the process's global namespace
global_config = GlobalConfig()
