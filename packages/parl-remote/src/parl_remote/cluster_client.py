"""``ClusterClient`` under its former module name (the code is in ``client/cluster_client.py``)."""

from parl_remote.client.cluster_client import ClusterClient

__all__ = ["ClusterClient"]
