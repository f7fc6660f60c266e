# tests/sanitize: the unit and interposer suites under sanitizers.
#
#   make check SANITIZE=address,undefined   every suite, from build/san-address-undefined/
#   make check SANITIZE=thread              the same under ThreadSanitizer
#   make sanitize-build SANITIZE=...        only the GoogleTest binaries (and what they run)
#
# In an ordinary `make check`, tests/sanitize/run.sh --build-only builds the GoogleTest
# binaries with ASan+UBSan (-O1) into $(O)/san-address-undefined (a separate tree;
# incremental after the first run) in the build phase, and the suite tests/sanitize/run.sh
# runs them, one TAP case per binary: the CI part of the sanitizer runs. Set
# SANITIZE_IN_CHECK=0 to leave it out. Suppressions, each with its reason, are in
# tests/sanitize/*.supp.
.PHONY: sanitize-build sanitize-list
# Recursive, so that every fragment's GTEST_SUITES is known when the list expands.
sanitize-build:
	@$(MAKE) --no-print-directory $(GTEST_SUITES)
sanitize-list:
	@echo $(GTEST_SUITES)

ifeq ($(SANITIZE)$(filter 0,$(SANITIZE_IN_CHECK)),)
TAP_SUITES += tests/sanitize/run.sh
CHECK_PREPARE += sanitize-prepare
endif
.PHONY: sanitize-prepare
sanitize-prepare:
	@O=$(abs_O) tests/sanitize/run.sh --build-only
