# Microbenchmarks (not part of make check; results in Documentation/results/).
# The pricing microbenchmark (pricing_bench.cc) is registered by agent/pricing/Build.mk.
$(O)/bin/ripple-tracer-bench: $(call objs,tools/bench/micro/tracer_bench.cc) $(TRACER_LIBS)
$(O)/bin/ripple-tracer-bench: LDLIBS := $(LDLIBS_TRACER)
$(O)/bin/ripple-tracer-bench: ; $(link_cxx)
BINS += $(O)/bin/ripple-tracer-bench

# What one intercepted driver call costs (hook_bench.c; Documentation/cuhook.md "Per-call
# cost"): a plain driver-API program, run plain and under the interposer. Needs only the
# CUDA headers; the driver (real, or tests/cuhooks' test double) is dlopened at run time.
ifneq ($(wildcard $(CUDA_INCLUDE)/cuda.h),)
$(O)/bin/ripple-hook-bench: tools/bench/micro/hook_bench.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)$(CC) -std=gnu11 -O2 -g -Wall -Wextra -isystem $(CUDA_INCLUDE) $< -o $@ -ldl
BINS += $(O)/bin/ripple-hook-bench
endif
