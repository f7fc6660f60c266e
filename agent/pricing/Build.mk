# agent/pricing: the pricing core (paper §4.2, App. C) as a pure library with an
# injected clock: estimator, margin, fit and byte ledger. Documentation/estimator.md
# maps each rule of the paper to its function. Its tests and microbenchmark are here
# too so that the whole module lives in one fragment.

PRICING_SRCS := agent/pricing/params.cc agent/pricing/fit.cc agent/pricing/margin.cc \
	agent/pricing/estimator.cc agent/pricing/ledger.cc agent/pricing/config.cc agent/pricing/chunk.cc
$(PRICING_LIBS): $(call objs,$(PRICING_SRCS))
LIBS += $(PRICING_LIBS)
LDLIBS_PRICING := -lfmt

PRICING_TESTS := tests/unit/pricing_fit_test.cc tests/unit/pricing_margin_test.cc \
	tests/unit/pricing_estimator_test.cc tests/unit/pricing_ledger_test.cc \
	tests/unit/pricing_config_test.cc tests/unit/pricing_stats_test.cc \
	tests/unit/pricing_closed_loop_test.cc tests/unit/pricing_chunk_test.cc \
	tests/unit/pricing_percentile_test.cc

$(O)/tests/unit/pricing_test: $(call objs,$(PRICING_TESTS)) $(PRICING_LIBS)
$(O)/tests/unit/pricing_test: LDLIBS := $(LDLIBS_PRICING) $(LDLIBS_GTEST)
$(O)/tests/unit/pricing_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/pricing_test
GTEST_SUITES += $(O)/tests/unit/pricing_test

# Microbenchmark (not a check suite): Documentation/results/pricing.md.
$(O)/bin/ripple-pricing-bench: $(call objs,tools/bench/micro/pricing_bench.cc) $(PRICING_LIBS)
$(O)/bin/ripple-pricing-bench: LDLIBS := $(LDLIBS_PRICING) -lbenchmark -pthread
$(O)/bin/ripple-pricing-bench: ; $(link_cxx)
BINS += $(O)/bin/ripple-pricing-bench
