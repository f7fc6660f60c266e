# tools/: command-line programs.

RIPPLECTL_SRCS := tools/ripplectl/main.cc tools/ripplectl/trace.cc
$(O)/bin/ripplectl: $(call objs,$(RIPPLECTL_SRCS)) $(TRACER_LIBS)
$(O)/bin/ripplectl: LDLIBS := $(LDLIBS_TRACER)
$(O)/bin/ripplectl: ; $(link_cxx)
BINS += $(O)/bin/ripplectl

# Benchmarks (not part of make check; results in Documentation/results/).
$(O)/bin/ripple-tracer-bench: $(call objs,tools/bench/tracer_bench.cc) $(TRACER_LIBS)
$(O)/bin/ripple-tracer-bench: LDLIBS := $(LDLIBS_TRACER)
$(O)/bin/ripple-tracer-bench: ; $(link_cxx)
BINS += $(O)/bin/ripple-tracer-bench

# ripplectl status | top | explain (the agent's control socket; issue 5).
$(O)/bin/ripplectl: $(call objs,tools/ripplectl/status.cc) $(O)/lib/libripple_metrics.a

# ripplectl doctor: can Ripple run on this machine? (Documentation/deploy.md)
$(O)/bin/ripplectl: $(call objs,tools/ripplectl/doctor.cc)
TAP_SUITES += tests/deploy/doctor.sh
