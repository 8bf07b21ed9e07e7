"""What this repository's own test suite needs: pytester, to run whole pytest sessions in a temp dir."""

pytest_plugins = ["pytester"]
