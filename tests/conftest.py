"""Test setup: verify the IR after every pass, and import the helper modules beside the tests."""
import os
import sys

os.environ.setdefault("ASTJIT_VERIFY", "1")
sys.path.insert(0, os.path.dirname(__file__))
