"""Modules of the chaos harness (tests/chaos/chaos.py). They live in this folder, not beside
chaos.py, so that sluice_python_suite() (tests/CMakeLists.txt), which makes a ctest of every
tests/chaos/*.py, does not take them for tests."""
