# tools/packaging/gpu: scripts run on a GPU machine (not part of make check). Their
# analysis is: overhead_ci.py, engines-check.sh's overhead verdict, on call 4's
# overhead.txt and two synthetic files (TAP, python3).
TAP_SUITES += tests/bench/overhead_ci_test.py
