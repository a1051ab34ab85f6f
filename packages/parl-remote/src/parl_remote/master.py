"""The master process under its former module name: ``python -m parl_remote.master`` still starts one (the
code is in ``server/master.py``)."""

from parl_remote.server.master import Master, main

__all__ = ["Master", "main"]

if __name__ == "__main__":
    main()
