# ripplectl: the operator's CLI (Documentation/agent.md, deploy.md, tracer.md).
# trace: the tracer alone; status | top | explain | metrics: the agent's control socket;
# doctor: can Ripple run on this machine?
RIPPLECTL_SRCS := tools/cli/ripplectl/main.cc tools/cli/ripplectl/trace.cc tools/cli/ripplectl/status.cc \
	tools/cli/ripplectl/doctor.cc
$(O)/bin/ripplectl: $(call objs,$(RIPPLECTL_SRCS)) $(TRACER_LIBS) $(O)/lib/libripple_metrics.a
$(O)/bin/ripplectl: LDLIBS := $(LDLIBS_TRACER)
$(O)/bin/ripplectl: ; $(link_cxx)
BINS += $(O)/bin/ripplectl
TAP_SUITES += tests/deploy/doctor.sh
