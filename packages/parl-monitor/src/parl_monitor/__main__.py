"""``python -m parl_monitor --address HOST:PORT``."""

from parl_monitor.cli import main

if __name__ == "__main__":
    main()
