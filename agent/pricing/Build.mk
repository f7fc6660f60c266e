# agent/pricing: the pricing core (paper §4.2, App. C) as a pure library with an
# injected clock: estimator, margin, fit and byte ledger. Documentation/estimator.md
# maps each rule of the paper to its function. Its tests and microbenchmark are here
# too so that the whole module lives in one fragment.

PRICING_SRCS := agent/pricing/params.cc agent/pricing/fit.cc agent/pricing/margin.cc \
	agent/pricing/estimator.cc agent/pricing/ledger.cc agent/pricing/config.cc
EIGEN_CFLAGS := -I/usr/include/eigen3
$(foreach s,$(PRICING_SRCS:.cc=),$(eval CXXFLAGS_$(subst /,_,$(s)) += $(EIGEN_CFLAGS)))

$(O)/lib/libripple_pricing.a: $(call objs,$(PRICING_SRCS))
LIBS += $(O)/lib/libripple_pricing.a
LDLIBS_PRICING := -lfmt

PRICING_TESTS := tests/unit/pricing_fit_test.cc tests/unit/pricing_margin_test.cc \
	tests/unit/pricing_estimator_test.cc tests/unit/pricing_ledger_test.cc \
	tests/unit/pricing_config_test.cc tests/unit/pricing_stats_test.cc \
	tests/unit/pricing_closed_loop_test.cc tests/unit/pricing_percentile_test.cc
$(foreach s,$(PRICING_TESTS:.cc=),$(eval CXXFLAGS_$(subst /,_,$(s)) += $(EIGEN_CFLAGS)))

$(O)/tests/unit/pricing_test: $(call objs,$(PRICING_TESTS)) $(O)/lib/libripple_pricing.a
$(O)/tests/unit/pricing_test: LDLIBS := $(LDLIBS_PRICING) $(LDLIBS_GTEST)
$(O)/tests/unit/pricing_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/pricing_test
GTEST_SUITES += $(O)/tests/unit/pricing_test

# Microbenchmark (not a check suite): Documentation/results/pricing.md.
CXXFLAGS_tools_bench_pricing_bench += $(EIGEN_CFLAGS)
$(O)/bin/ripple-pricing-bench: $(call objs,tools/bench/pricing_bench.cc) $(O)/lib/libripple_pricing.a
$(O)/bin/ripple-pricing-bench: LDLIBS := $(LDLIBS_PRICING) -lbenchmark -pthread
$(O)/bin/ripple-pricing-bench: ; $(link_cxx)
BINS += $(O)/bin/ripple-pricing-bench
