"""Test setup: verify the IR after every pass, and find the acceptance corpus."""
import os
import sys

os.environ.setdefault("ASTJIT_VERIFY", "1")
HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
ACCEPTANCE = os.path.join(HERE, "..", "..", "shared", "acceptance")
if os.path.isdir(ACCEPTANCE):
    sys.path.append(ACCEPTANCE)
