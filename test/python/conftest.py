"""Shared fixtures of Kiln's Python tests."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "large: big end-to-end models, run with -m large or KILN_LARGE_TESTS=1")
