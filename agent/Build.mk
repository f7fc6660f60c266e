# agent/: the daemon's libraries. Each module is a static library the daemon,
# the tools and the tests link.

COMMON_SRCS := agent/common/log.cc
$(O)/lib/libripple_common.a: $(call objs,$(COMMON_SRCS))
LIBS += $(O)/lib/libripple_common.a

TRACER_SRCS := agent/tracer/tracer.cc agent/tracer/features.cc \
	agent/tracer/elf_symbols.cc agent/tracer/threads.cc
$(O)/lib/libripple_tracer.a: $(call objs,$(TRACER_SRCS))
LIBS += $(O)/lib/libripple_tracer.a
# Link order for users of the tracer.
TRACER_LIBS := $(O)/lib/libripple_tracer.a $(O)/lib/libripple_common.a
LDLIBS_TRACER := $(LDLIBS_BPF) $(LDLIBS_LOG)
