# agent/daemon: ripple-agent, the daemon around the admission, policy, pricing, tracer,
# protocol and config libraries. agent.cc is the wiring; the event loop, the engine
# sessions, the task statistics and the reports are pieces of their own, each with its
# unit test (agent/daemon/agent.h lists them).

DAEMON_SRCS := agent/daemon/agent.cc agent/daemon/event_loop.cc agent/daemon/engine_session.cc \
	agent/daemon/task_stats.cc agent/daemon/release_lag.cc agent/daemon/reports.cc agent/daemon/socket.cc agent/daemon/identity.cc \
	agent/daemon/limits.cc agent/daemon/notify.cc agent/daemon/trace_file.cc
$(O)/lib/libripple_daemon.a: $(call objs,$(DAEMON_SRCS))
LIBS += $(O)/lib/libripple_daemon.a
# The Prometheus exposition of status_json (agent/daemon/metrics.h): the agent's textfile
# and `ripplectl metrics`.
$(O)/lib/libripple_metrics.a: $(call objs,agent/daemon/metrics.cc)
LIBS += $(O)/lib/libripple_metrics.a

# sd_notify(3) through libsystemd where its headers are installed; without them notify.cc
# writes the same datagram itself (agent/daemon/notify.h).
ifeq ($(shell $(PKG_CONFIG) --exists libsystemd 2>/dev/null && echo y),y)
CXXFLAGS_agent_daemon_notify += -DRIPPLE_HAVE_LIBSYSTEMD
LDLIBS_AGENT += $(shell $(PKG_CONFIG) --libs libsystemd)
endif

$(O)/bin/ripple-agent: $(call objs,agent/daemon/main.cc) $(AGENT_LIBS)
$(O)/bin/ripple-agent: LDLIBS := $(LDLIBS_AGENT)
$(O)/bin/ripple-agent: ; $(link_cxx)
BINS += $(O)/bin/ripple-agent

# Closed loop on the emulated interference plant (TAP, bash; needs root for BPF).
TAP_SUITES += tests/integration/agent_closed_loop.sh

# Fault injection against the real agent and tracer (TAP, bash; needs root for BPF).
TAP_SUITES += tests/integration/reliability.sh

# Engine identity and access: allowed uids/groups, [[engine]] uid/exe, unconfigured
# engines, an impostor agent socket (TAP, bash; root for setpriv, no BPF).
TAP_SUITES += tests/integration/access.sh

# The daemon's pure guards (log throttle, status listing, process identity).
$(O)/tests/unit/agent_limits_test: $(call objs,tests/unit/agent_limits_test.cc) $(O)/lib/libripple_daemon.a
$(O)/tests/unit/agent_limits_test: LDLIBS := $(LDLIBS_GTEST)
$(O)/tests/unit/agent_limits_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/agent_limits_test
GTEST_SUITES += $(O)/tests/unit/agent_limits_test

# The metrics text parsed back by a strict exposition-format reader (GoogleTest).
$(O)/tests/unit/metrics_test: $(call objs,tests/unit/metrics_test.cc) $(AGENT_LIBS)
$(O)/tests/unit/metrics_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_AGENT)
$(O)/tests/unit/metrics_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/metrics_test
GTEST_SUITES += $(O)/tests/unit/metrics_test

# The sd_notify datagram written without libsystemd (GoogleTest; compiles notify.cc itself).
$(O)/tests/unit/notify_test: $(call objs,tests/unit/notify_test.cc)
$(O)/tests/unit/notify_test: LDLIBS := $(LDLIBS_GTEST)
$(O)/tests/unit/notify_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/notify_test
GTEST_SUITES += $(O)/tests/unit/notify_test

# Peer identity: credentials, allowed uids/groups, [[engine]] uid/exe (GoogleTest).
$(O)/tests/unit/agent_identity_test: $(call objs,tests/unit/agent_identity_test.cc) $(AGENT_LIBS)
$(O)/tests/unit/agent_identity_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_AGENT)
$(O)/tests/unit/agent_identity_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/agent_identity_test
GTEST_SUITES += $(O)/tests/unit/agent_identity_test

# The daemon's pieces without sockets or BPF: the event loop on eventfds, the engine
# sessions, the task statistics, status and explain (GoogleTest).
AGENT_DAEMON_TESTS := tests/unit/agent_event_loop_test.cc tests/unit/agent_engine_session_test.cc \
	tests/unit/agent_task_stats_test.cc tests/unit/agent_reports_test.cc tests/unit/agent_trace_file_test.cc
$(O)/tests/unit/agent_daemon_test: $(call objs,$(AGENT_DAEMON_TESTS)) $(AGENT_LIBS)
$(O)/tests/unit/agent_daemon_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_AGENT)
$(O)/tests/unit/agent_daemon_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/agent_daemon_test
GTEST_SUITES += $(O)/tests/unit/agent_daemon_test
