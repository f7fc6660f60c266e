# agent/policy: every admission policy behind one interface (agent/admission/policy.h),
# one .h/.cc pair each: ripple (§4.1-4.3), the §5.1 / App. D baselines (unmanaged, pause,
# cap-x, sigamma, sereno) and pace-R; registry.cc makes them by name.
POLICY_SRCS := agent/policy/ripple.cc agent/policy/unmanaged.cc agent/policy/pause.cc agent/policy/cap.cc \
	agent/policy/sigamma.cc agent/policy/sereno.cc agent/policy/pace.cc agent/policy/registry.cc
$(O)/lib/libripple_policy.a: $(call objs,$(POLICY_SRCS))
LIBS += $(O)/lib/libripple_policy.a

$(O)/tests/unit/policy_test: $(call objs,tests/unit/policy_test.cc) $(ADMISSION_LIBS)
$(O)/tests/unit/policy_test: LDLIBS := -lfmt $(LDLIBS_GTEST)
$(O)/tests/unit/policy_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/policy_test
GTEST_SUITES += $(O)/tests/unit/policy_test
