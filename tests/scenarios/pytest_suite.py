"""The whole pytest suite (tests/python), as one scenario."""

import sys

import pytest

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "tests/python", *sys.argv[1:]]))
