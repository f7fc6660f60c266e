# tools/: command-line programs.

RIPPLECTL_SRCS := tools/ripplectl/main.cc tools/ripplectl/trace.cc
$(O)/bin/ripplectl: $(call objs,$(RIPPLECTL_SRCS)) $(TRACER_LIBS)
$(O)/bin/ripplectl: LDLIBS := $(LDLIBS_TRACER)
$(O)/bin/ripplectl: ; $(link_cxx)
BINS += $(O)/bin/ripplectl
