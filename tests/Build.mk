# tests/: test programs and suites of the tracer and foundation.
# (Other modules register their suites in their own Build.mk.)

# An ordinary periodic program that logs its own ground truth (no Ripple link).
$(O)/tests/progs/periodic: $(call objs,tests/progs/periodic.c)
$(O)/tests/progs/periodic: LDLIBS := -pthread
$(O)/tests/progs/periodic: ; $(link_c)
TEST_BINS += $(O)/tests/progs/periodic
