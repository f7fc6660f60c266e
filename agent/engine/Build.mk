# agent/engine: the engine protocol (SOCK_SEQPACKET messages) and the engine-side
# client library; agent/config: the TOML configuration. Documentation/agent.md.

ENGINE_SRCS := agent/engine/protocol.cc agent/engine/client.cc
$(O)/lib/libripple_engine.a: $(call objs,$(ENGINE_SRCS))
LIBS += $(O)/lib/libripple_engine.a

CONFIG_SRCS := agent/config/config.cc
$(foreach s,$(CONFIG_SRCS:.cc=) tests/unit/agent_config_test,\
	$(eval CXXFLAGS_$(subst /,_,$(s)) += -I/usr/include/eigen3))
$(O)/lib/libripple_config.a: $(call objs,$(CONFIG_SRCS))
LIBS += $(O)/lib/libripple_config.a

$(O)/tests/unit/engine_protocol_test: $(call objs,tests/unit/engine_protocol_test.cc) $(O)/lib/libripple_engine.a \
	$(O)/lib/libripple_common.a
$(O)/tests/unit/engine_protocol_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_LOG)
$(O)/tests/unit/engine_protocol_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/engine_protocol_test
GTEST_SUITES += $(O)/tests/unit/engine_protocol_test

$(O)/tests/unit/agent_config_test: $(call objs,tests/unit/agent_config_test.cc) $(O)/lib/libripple_config.a \
	$(O)/lib/libripple_policy.a $(O)/lib/libripple_admission.a $(O)/lib/libripple_pricing.a $(TRACER_LIBS)
$(O)/tests/unit/agent_config_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_TRACER)
$(O)/tests/unit/agent_config_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/agent_config_test
GTEST_SUITES += $(O)/tests/unit/agent_config_test
