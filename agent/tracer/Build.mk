# agent/tracer: the job tracer (bpf/tracer.bpf.c). libripple_ptspec.a is its BPF-free
# half (what a PT is and how a spec is checked, ELF symbols, /proc threads, kernel
# feature probes), which the configuration and ripplectl doctor link without libbpf;
# libripple_tracer.a is the libbpf loader.
PTSPEC_SRCS := agent/tracer/spec.cc agent/tracer/elf_symbols.cc agent/tracer/threads.cc agent/tracer/features.cc
$(PTSPEC_LIBS): $(call objs,$(PTSPEC_SRCS))
$(O)/lib/libripple_tracer.a: $(call objs,agent/tracer/tracer.cc)
LIBS += $(PTSPEC_LIBS) $(O)/lib/libripple_tracer.a

# Unit tests of the BPF-free half (no libbpf linked).
$(O)/tests/unit/tracer_test: $(call objs,tests/unit/tracer_test.cc) $(PTSPEC_LIBS) $(COMMON_LIBS)
$(O)/tests/unit/tracer_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_PTSPEC) $(LDLIBS_LOG)
$(O)/tests/unit/tracer_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/tracer_test
GTEST_SUITES += $(O)/tests/unit/tracer_test

# The tracer library with the real BPF program (root).
$(O)/tests/integration/tracer_test: $(call objs,tests/integration/tracer_test.cc) \
	$(call objs,tests/lib/groundtruth.c) $(TRACER_LIBS)
$(O)/tests/integration/tracer_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_TRACER)
$(O)/tests/integration/tracer_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/integration/tracer_test
GTEST_SUITES += $(O)/tests/integration/tracer_test
