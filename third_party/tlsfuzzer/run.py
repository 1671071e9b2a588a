"""Runs one tlsfuzzer test script (a module of tlsfuzzer/_apps) with Python's random
generator seeded, so the cases a script draws at random (cipher ids, bit positions, the order
of the sample) are the same on every server it is pointed at and the results compare test by
test. Written for sirocco (not part of tlsfuzzer): run.py SEED MODULE [script options]."""
import importlib
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
random.seed(int(sys.argv[1]))
module = importlib.import_module("tlsfuzzer._apps." + sys.argv[2])
sys.argv = [sys.argv[2]] + sys.argv[3:]
module.main()
