# agent/daemon: ripple-agent, the daemon (liburing loop, engine sessions, control
# socket) around the admission, policy, pricing, tracer, engine and config libraries.

DAEMON_SRCS := agent/daemon/agent.cc agent/daemon/limits.cc
$(foreach s,$(DAEMON_SRCS:.cc=) agent/daemon/main,$(eval CXXFLAGS_$(subst /,_,$(s)) += -I/usr/include/eigen3))
$(O)/lib/libripple_daemon.a: $(call objs,$(DAEMON_SRCS))
LIBS += $(O)/lib/libripple_daemon.a
# Link order for programs embedding the agent.
AGENT_LIBS := $(O)/lib/libripple_daemon.a $(O)/lib/libripple_config.a $(O)/lib/libripple_engine.a \
	$(O)/lib/libripple_policy.a $(O)/lib/libripple_admission.a $(O)/lib/libripple_pricing.a $(TRACER_LIBS)
LDLIBS_AGENT := -luring $(LDLIBS_TRACER)

$(O)/bin/ripple-agent: $(call objs,agent/daemon/main.cc) $(AGENT_LIBS)
$(O)/bin/ripple-agent: LDLIBS := $(LDLIBS_AGENT)
$(O)/bin/ripple-agent: ; $(link_cxx)
BINS += $(O)/bin/ripple-agent

# Stand-in engine (a TEST DOUBLE) speaking the real protocol, for the integration
# test and the grant round-trip benchmark.
$(O)/tests/integration/agent_engine: $(call objs,tests/integration/agent_engine.cc) $(O)/lib/libripple_engine.a
$(O)/tests/integration/agent_engine: LDLIBS := -lfmt -lrt
$(O)/tests/integration/agent_engine: ; $(link_cxx)
TEST_BINS += $(O)/tests/integration/agent_engine

# Closed loop on the emulated interference plant (TAP, bash; needs root for BPF).
TAP_SUITES += tests/integration/agent_closed_loop.sh

# Fault injection against the real agent and tracer (TAP, bash; needs root for BPF).
TAP_SUITES += tests/integration/reliability.sh

# The daemon's pure guards (log throttle, status listing, process identity).
$(O)/tests/unit/agent_limits_test: $(call objs,tests/unit/agent_limits_test.cc) $(O)/lib/libripple_daemon.a
$(O)/tests/unit/agent_limits_test: LDLIBS := $(LDLIBS_GTEST)
$(O)/tests/unit/agent_limits_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/agent_limits_test
GTEST_SUITES += $(O)/tests/unit/agent_limits_test
