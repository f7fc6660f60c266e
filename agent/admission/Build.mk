# agent/admission: the admission framework (paper §4.1, §4.3): engines, work queues,
# grant slots, the ledger calls; a pure library with an injected clock. The policies it
# runs are in agent/policy. Documentation/agent.md describes both.
$(O)/lib/libripple_admission.a: $(call objs,agent/admission/admission.cc agent/admission/revocation.cc agent/admission/state.cc agent/admission/trace.cc)
LIBS += $(O)/lib/libripple_admission.a

$(O)/tests/unit/admission_test: $(call objs,tests/unit/admission_test.cc) $(ADMISSION_LIBS)
$(O)/tests/unit/admission_test: LDLIBS := -lfmt $(LDLIBS_GTEST)
$(O)/tests/unit/admission_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/admission_test
GTEST_SUITES += $(O)/tests/unit/admission_test
