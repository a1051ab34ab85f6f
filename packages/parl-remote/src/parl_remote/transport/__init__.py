"""Transports: how wire-format messages travel between two processes (zmq over TCP / ipc, the same-host
Unix stream) and the Ctrl-C deferral that keeps a message whole. Above ``wire/``, below ``client/`` and
``server/``."""
