import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from fake_cluster import FakeCluster  # noqa: E402

from parl_monitor import create_app  # noqa: E402


@pytest.fixture
def fake():
    return FakeCluster()


@pytest.fixture
def app(fake, monkeypatch):
    for key in [k for k in os.environ if k.startswith("PARL_MONITOR_")]:
        monkeypatch.delenv(key)
    # PUBLIC: these tests read logs and tracebacks; test_private_data.py tests the default (token needed)
    return create_app({"CLIENT": fake, "CACHE_TTL_S": 0.0, "HISTORY_INTERVAL_S": 0.0, "TESTING": True,
                       "PUBLIC": True})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def artifacts_dir() -> pathlib.Path:
    """Where screenshots go: $PARL_TEST_ARTIFACTS or <repo>/test-artifacts (gitignored)."""
    root = os.environ.get("PARL_TEST_ARTIFACTS") or str(pathlib.Path(__file__).resolve().parents[3] / "test-artifacts")
    path = pathlib.Path(root) / "parl-monitor"
    path.mkdir(parents=True, exist_ok=True)
    return path


INSTALL_HINT = "run packages/parl-monitor/tests/install_chromium.sh (apt-get install chromium chromium-driver)"


def _find(env_var: str, name: str) -> str | None:
    """``$env_var`` when set (a path), else ``name`` looked up on PATH."""
    import shutil

    override = os.environ.get(env_var)
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which(name)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless Debian chromium driven by Selenium through /usr/bin/chromedriver. Missing -> the test FAILS."""
    chromium = _find("PARL_TEST_CHROMIUM", "chromium")
    driver_path = _find("PARL_TEST_CHROMEDRIVER", "chromedriver")
    if chromium is None or driver_path is None:
        pytest.fail(f"the browser tests need Debian's chromium and chromedriver (chromium={chromium}, "
                    f"chromedriver={driver_path}): {INSTALL_HINT}")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the browser tests need selenium: pip install 'selenium>=4.15' (nox installs it from "
                    "EXTRA_TEST_DEPS['parl-monitor'])")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


class ServedApp:
    """A Flask app served by werkzeug on 127.0.0.1 (an ephemeral port) in a daemon thread."""

    def __init__(self, app) -> None:
        import threading

        from werkzeug.serving import make_server

        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def serve():
    served: list[ServedApp] = []

    def start(app) -> ServedApp:
        served.append(ServedApp(app))
        return served[-1]

    yield start
    for s in served:
        s.close()
