"""``parl.remote.remote_decorator``: PARL 2.x's path of ``remote_class`` (``parl_remote``'s own object)."""

from parl_remote.client.decorator import remote_class

__all__ = ["remote_class"]
