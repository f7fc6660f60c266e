# agent/admission and agent/policy: admission (paper §4.1, §4.3) and the policies
# behind one interface (ripple and the §5.1 baselines), as pure libraries with an
# injected clock. Documentation/agent.md describes them.

AGENT_EIGEN_CFLAGS := -I/usr/include/eigen3
ADMISSION_SRCS := agent/admission/admission.cc agent/admission/ripple_policy.cc
POLICY_SRCS := agent/policy/baselines.cc agent/policy/registry.cc
ADMISSION_TESTS := tests/unit/admission_test.cc tests/unit/policy_test.cc
$(foreach s,$(ADMISSION_SRCS:.cc=) $(POLICY_SRCS:.cc=) $(ADMISSION_TESTS:.cc=),\
	$(eval CXXFLAGS_$(subst /,_,$(s)) += $(AGENT_EIGEN_CFLAGS)))

$(O)/lib/libripple_admission.a: $(call objs,$(ADMISSION_SRCS))
$(O)/lib/libripple_policy.a: $(call objs,$(POLICY_SRCS))
LIBS += $(O)/lib/libripple_admission.a $(O)/lib/libripple_policy.a
# Link order for users of admission and the policies.
ADMISSION_LIBS := $(O)/lib/libripple_policy.a $(O)/lib/libripple_admission.a $(O)/lib/libripple_pricing.a

$(O)/tests/unit/admission_test: $(call objs,$(ADMISSION_TESTS)) $(ADMISSION_LIBS)
$(O)/tests/unit/admission_test: LDLIBS := -lfmt $(LDLIBS_GTEST)
$(O)/tests/unit/admission_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/admission_test
GTEST_SUITES += $(O)/tests/unit/admission_test
