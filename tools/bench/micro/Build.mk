# Microbenchmarks (not part of make check; results in Documentation/results/).
# The pricing microbenchmark (pricing_bench.cc) is registered by agent/pricing/Build.mk.
$(O)/bin/ripple-tracer-bench: $(call objs,tools/bench/micro/tracer_bench.cc) $(TRACER_LIBS)
$(O)/bin/ripple-tracer-bench: LDLIBS := $(LDLIBS_TRACER)
$(O)/bin/ripple-tracer-bench: ; $(link_cxx)
BINS += $(O)/bin/ripple-tracer-bench
