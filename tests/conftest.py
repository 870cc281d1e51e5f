"""Test setup: verify the IR after every pass, and import the helper modules in support/.

The tests are grouped by layer (frontend/, ir/, passes/, ad/, backend/, e2e/, api/); the
corpora, case lists and checks they share live in support/, on sys.path for all of them."""
import os
import sys

os.environ.setdefault("ASTJIT_VERIFY", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "support"))
