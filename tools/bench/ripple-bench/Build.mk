# tools/bench/ripple-bench: the end-to-end experiment harness (issue 7), a Python 3 program
# (standard library; tomli-w for the agent configs, matplotlib for the PNGs). $(O)/bin/ripple-bench runs it from the tree.
$(O)/bin/ripple-bench: tools/bench/ripple-bench/ripple-bench $(wildcard tools/bench/ripple-bench/benchlib/*.py)
	@mkdir -p $(@D)
	$(call msg,GEN,$@)printf '#!/bin/sh\n# ripple-bench from the source tree (tools/bench/ripple-bench)\nexec %s "$$@"\n' \
		"$(abspath tools/bench/ripple-bench/ripple-bench)" > $@ && chmod +x $@
BINS += $(O)/bin/ripple-bench

# Tests: the pure metrics and table (TAP), and the quick bench on the emulated plant (a
# TEST DOUBLE): ripple meets eps where unmanaged does not (TAP, root, ~35 s).
TAP_SUITES += tests/bench/metrics_test.py tests/bench/bench_quick.sh
