"""The Ray engine: the same ``@remote_class`` code on a Ray cluster (``parl.connect("ray://HOST:10001")``,
``parl.connect("ray")``). ``engine.py`` is the caller's side (a client with the interface of the xparl
``Client``), ``host.py`` the actor Ray runs for each remote object (what a job is on xparl). Ray is imported
only when this engine is used (``pip install "parl-remote[ray]"``)."""
