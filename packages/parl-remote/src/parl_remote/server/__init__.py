"""The cluster's processes: the master (registry and scheduler), the worker (one per machine, keeping warm
job processes forked from a zygote) and the job (one per actor, serving its client). Above ``transport/``
and ``wire/``; never imports the client library (``client/``)."""
