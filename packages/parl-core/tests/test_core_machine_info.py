"""parl_core.utils.machine_info: ports, IP address, GPU count."""

import socket

from parl_core.utils import get_free_tcp_port, get_gpu_count, get_ip_address, is_gpu_available, is_port_available


def test_free_port_is_bindable_and_a_listening_port_is_not():
    port = get_free_tcp_port()
    assert 1024 <= port <= 65535
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert is_port_available(port) is False
    assert is_port_available(port) is True


def test_ip_address_is_an_ipv4_address():
    parts = get_ip_address().split(".")
    assert len(parts) == 4 and all(0 <= int(p) <= 255 for p in parts)


def test_gpu_count_follows_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2")
    assert get_gpu_count() == 2 and is_gpu_available()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert get_gpu_count() == 0 and not is_gpu_available()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert get_gpu_count() == 0
