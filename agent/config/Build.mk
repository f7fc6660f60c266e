# agent/config: the TOML configuration (Documentation/config.md). It checks each task's
# PtSpec (agent/tracer/spec.h) but loads nothing, so neither it nor its test links libbpf.
$(O)/lib/libripple_config.a: $(call objs,agent/config/config.cc agent/config/text.cc agent/config/preflight.cc)
LIBS += $(O)/lib/libripple_config.a

$(O)/tests/unit/agent_config_test: $(call objs,tests/unit/agent_config_test.cc) $(CONFIG_LIBS)
$(O)/tests/unit/agent_config_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_CONFIG)
$(O)/tests/unit/agent_config_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/agent_config_test
GTEST_SUITES += $(O)/tests/unit/agent_config_test
