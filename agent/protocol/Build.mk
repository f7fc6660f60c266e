# agent/protocol: the engine protocol (SOCK_SEQPACKET messages, include/ripple/protocol.h)
# and the engine-side client (include/ripple/client.h). The agent links the library; the
# interposer compiles the same sources position-independent (cuhooks/Build.mk), and the
# protocol fuzzer instrumented (tests/fuzz/Build.mk). Documentation/agent.md.
PROTOCOL_SRCS := agent/protocol/protocol.cc agent/protocol/client.cc
$(PROTOCOL_LIBS): $(call objs,$(PROTOCOL_SRCS))
LIBS += $(PROTOCOL_LIBS)

$(O)/tests/unit/engine_protocol_test: $(call objs,tests/unit/engine_protocol_test.cc) $(PROTOCOL_LIBS) $(COMMON_LIBS)
$(O)/tests/unit/engine_protocol_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_LOG)
$(O)/tests/unit/engine_protocol_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/engine_protocol_test
GTEST_SUITES += $(O)/tests/unit/engine_protocol_test
