import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Real DistributedDataParallel jobs (tests/ddp/); registered here as well so the
    # marker works even when pytest runs without the project configuration.
    config.addinivalue_line("markers", "ddp: runs real DistributedDataParallel jobs with torch")
    # A shell without job control starts a background command (`scripts/test &`, a CI runner's
    # script) with Ctrl-C and SIGQUIT ignored, and every process it starts inherits that: the
    # tests that press Ctrl-C on ddp-doctor would see it ignored. Their defaults are restored
    # here, so that they reach ddp-doctor as they reach it from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
