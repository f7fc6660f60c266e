# agent/: the daemon and its libraries, one static library per module. Each module's
# Build.mk (agent/<module>/Build.mk) builds its library and registers its tests; the
# link orders below are read first, so every fragment (agent, tools, tests) can name them.
# Documentation/design.md has the folder table.

# include/ripple/{status,log,toml}.h: agent/common (logging over spdlog).
COMMON_LIBS := $(O)/lib/libripple_common.a
# include/ripple/{protocol,client}.h: agent/protocol, the contract with the engines and
# the interposer (cuhooks/ compiles the same sources position-independent).
PROTOCOL_LIBS := $(O)/lib/libripple_protocol.a
# agent/tracer: the BPF-free half (PtSpec, ELF symbols, /proc threads, kernel feature
# probes), then the libbpf loader on top of it.
PTSPEC_LIBS := $(O)/lib/libripple_ptspec.a
LDLIBS_PTSPEC := -lelf -lfmt
TRACER_LIBS := $(O)/lib/libripple_tracer.a $(PTSPEC_LIBS) $(COMMON_LIBS)
LDLIBS_TRACER := $(LDLIBS_BPF) $(LDLIBS_LOG)
# agent/pricing, agent/admission, agent/policy: the pure core (no I/O, injected clock).
PRICING_LIBS := $(O)/lib/libripple_pricing.a
ADMISSION_LIBS := $(O)/lib/libripple_policy.a $(O)/lib/libripple_admission.a $(PRICING_LIBS)
# agent/config: the TOML configuration; it validates PtSpecs, so it needs no libbpf.
CONFIG_LIBS := $(O)/lib/libripple_config.a $(ADMISSION_LIBS) $(PTSPEC_LIBS)
LDLIBS_CONFIG := $(LDLIBS_PTSPEC)
# agent/daemon: ripple-agent's pieces, and everything a program embedding the agent links.
AGENT_LIBS := $(O)/lib/libripple_daemon.a $(O)/lib/libripple_metrics.a $(O)/lib/libripple_config.a \
	$(PROTOCOL_LIBS) $(ADMISSION_LIBS) $(TRACER_LIBS)
LDLIBS_AGENT := -luring $(LDLIBS_TRACER)
