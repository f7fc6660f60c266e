# cuhooks/: libripple-cuhook.so, the LD_PRELOAD interposer (Documentation/cuhook.md).
# Compiled position-independent into $(O)/pic with -fvisibility=hidden: only the hooks,
# dlsym, InitializeInjectionNvtx2 and the ripple_cuhook_* API are exported. Needs the
# CUDA headers (not a GPU); skipped where they are missing.
CUDA_INCLUDE ?= /usr/local/cuda/include
ifneq ($(wildcard $(CUDA_INCLUDE)/cuda.h),)

CUHOOK_SRCS := cuhooks/hooks.cc cuhooks/runtime.cc cuhooks/fork.cc cuhooks/nvtx.cc cuhooks/profile.cc cuhooks/chunker.cc \
	cuhooks/config.cc cuhooks/counters.cc cuhooks/boundaries.cc cuhooks/learning.cc cuhooks/gate.cc \
	cuhooks/grant_timer.cc cuhooks/pass_learner.cc \
	$(PROTOCOL_SRCS)
CUHOOK_PIC_OBJS := $(patsubst %.cc,$(O)/pic/%.o,$(CUHOOK_SRCS)) $(O)/pic/cuhooks/dlsym_trampoline.o
CUHOOK_CXXFLAGS := $(RIPPLE_CXXFLAGS) -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -isystem $(CUDA_INCLUDE)

$(O)/pic/%.o: %.cc | $(GENERATED_HEADERS)
	@mkdir -p $(@D)
	$(call msg,CXX-PIC,$@)$(CXX) $(CUHOOK_CXXFLAGS) -c $< -o $@

$(O)/pic/cuhooks/%.o: cuhooks/%.S
	@mkdir -p $(@D)
	$(call msg,AS,$@)$(CC) -fPIC -c $< -o $@

$(O)/lib/libripple-cuhook.so: $(CUHOOK_PIC_OBJS) cuhooks/exports.map
	@mkdir -p $(@D)
	$(call msg,LINK,$@)$(CXX) -shared -fPIC -o $@ $(filter %.o,$^) -Wl,-soname,libripple-cuhook.so -Wl,-z,defs \
		-Wl,--version-script=cuhooks/exports.map \
		-ldl -lfmt -pthread $(SAN_FLAGS)
LIBS += $(O)/lib/libripple-cuhook.so

# The profile library (unit catalog, sequence matcher, chunk planner, pass learners) for
# ripple-profile and the tests.
$(O)/lib/libripple_cuprofile.a: $(call objs,cuhooks/profile.cc cuhooks/chunker.cc cuhooks/pass_learner.cc)
LIBS += $(O)/lib/libripple_cuprofile.a

endif
