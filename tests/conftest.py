import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Real DistributedDataParallel jobs (tests/ddp/); registered here as well so the
    # marker works even when pytest runs without the project configuration.
    config.addinivalue_line("markers", "ddp: runs real DistributedDataParallel jobs with torch")
