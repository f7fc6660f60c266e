# tests/: test programs and suites of the tracer and foundation.
# (Other modules register their suites in their own Build.mk: the tracer's unit and
# integration tests are in agent/tracer/Build.mk.)

# An ordinary periodic program that logs its own ground truth (no Ripple link).
$(O)/tests/progs/periodic: $(call objs,tests/progs/periodic.c)
$(O)/tests/progs/periodic: LDLIBS := -pthread
$(O)/tests/progs/periodic: ; $(link_c)
TEST_BINS += $(O)/tests/progs/periodic

GROUNDTRUTH_OBJS := $(call objs,tests/lib/groundtruth.c)

# BPF tests: kselftest harness (from Debian's linux-source), TAP output.
$(O)/tests/bpf/tracer_test: $(call objs,tests/bpf/tracer_test.c) $(GROUNDTRUTH_OBJS)
$(O)/tests/bpf/tracer_test: LDLIBS := $(LDLIBS_BPF)
$(O)/tests/bpf/tracer_test: ; $(link_c)
TEST_BINS += $(O)/tests/bpf/tracer_test
TAP_SUITES += $(O)/tests/bpf/tracer_test

# ripplectl trace end to end (TAP, bash).
TAP_SUITES += tests/integration/ripplectl_trace.sh

CFLAGS_tests_bpf_tracer_test := -Wno-sign-compare -Wno-unused-parameter  # the kselftest harness compares mixed types by design
