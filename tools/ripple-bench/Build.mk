# tools/ripple-bench: the end-to-end experiment harness (issue 7), a Python 3 program
# (standard library; matplotlib for the PNGs). $(O)/bin/ripple-bench runs it from the tree.
$(O)/bin/ripple-bench: tools/ripple-bench/ripple-bench $(wildcard tools/ripple-bench/benchlib/*.py)
	@mkdir -p $(@D)
	$(call msg,GEN,$@)printf '#!/bin/sh\n# ripple-bench from the source tree (tools/ripple-bench)\nexec %s "$$@"\n' \
		"$(abspath tools/ripple-bench/ripple-bench)" > $@ && chmod +x $@
BINS += $(O)/bin/ripple-bench
