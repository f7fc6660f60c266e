# agent/common: the logging header's implementation (include/ripple/log.h over spdlog);
# include/ripple/status.h and toml.h are header-only.
$(COMMON_LIBS): $(call objs,agent/common/log.cc)
LIBS += $(COMMON_LIBS)
