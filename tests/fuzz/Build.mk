# tests/fuzz: libFuzzer harnesses for the readers of untrusted input: the engine-protocol
# decoder, the agent's TOML configuration, the unit catalog (profile JSON). Built with
# clang (-fsanitize=fuzzer plus ASan and UBSan) into $(O)/fuzz; the harness sources and
# the sources under test are compiled there; the libraries they call beyond those come
# from the ordinary (gcc) build. tests/fuzz/run.sh runs each for FUZZ_SECONDS on a copy
# of its committed seed corpus (tests/fuzz/corpus/<name>/), one TAP case per harness.
# Skipped (no targets) where clang's libFuzzer runtime (libclang-rt-14-dev) is missing.
FUZZ_CXX ?= clang++
FUZZ_RT := $(shell $(FUZZ_CXX) -print-file-name=libclang_rt.fuzzer-$(UNAME_M).a 2>/dev/null)
# The architecture the ordinary build compiles for (a cross build links no host harness).
FUZZ_BUILD_ARCH := $(firstword $(subst -, ,$(shell $(CXX) -dumpmachine 2>/dev/null)))
# Not part of a SANITIZE= build (the harnesses carry their own sanitizers), nor of a
# cross build.
ifeq ($(wildcard $(FUZZ_RT))$(SANITIZE)$(filter-out $(UNAME_M),$(FUZZ_BUILD_ARCH)),$(FUZZ_RT))

FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CXXFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -std=gnu++20 -O1 -g -fno-omit-frame-pointer -I. -Iinclude -I$(O)/include -MMD -MP \
	$(EIGEN_CFLAGS)
# Objects instrumented for the fuzzer (coverage + sanitizers).
fuzz_objs = $(patsubst %.cc,$(O)/fuzz/obj/%.o,$(1))

$(O)/fuzz/obj/%.o: %.cc tests/fuzz/Build.mk | $(GENERATED_HEADERS)
	@mkdir -p $(@D)
	$(call msg,FUZZ-CXX,$@)$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -c $< -o $@

define link_fuzz
	@mkdir -p $(@D)
	$(call msg,FUZZ-LD,$@)$(FUZZ_CXX) $(FUZZ_SAN) -o $@ $(filter %.o %.a,$^) $(LDLIBS)
endef

$(O)/fuzz/fuzz_protocol: $(call fuzz_objs,tests/fuzz/fuzz_protocol.cc agent/protocol/protocol.cc)
$(O)/fuzz/fuzz_protocol: LDLIBS := -lfmt
$(O)/fuzz/fuzz_protocol: ; $(link_fuzz)

$(O)/fuzz/fuzz_profile: $(call fuzz_objs,tests/fuzz/fuzz_profile.cc cuhooks/profile.cc)
$(O)/fuzz/fuzz_profile: LDLIBS := -lfmt
$(O)/fuzz/fuzz_profile: ; $(link_fuzz)

$(O)/fuzz/fuzz_config: $(call fuzz_objs,tests/fuzz/fuzz_config.cc agent/config/config.cc agent/config/text.cc agent/config/preflight.cc) \
	$(filter-out $(O)/lib/libripple_config.a,$(CONFIG_LIBS))
$(O)/fuzz/fuzz_config: LDLIBS := $(LDLIBS_CONFIG)
$(O)/fuzz/fuzz_config: ; $(link_fuzz)

FUZZ_BINS := $(O)/fuzz/fuzz_protocol $(O)/fuzz/fuzz_profile $(O)/fuzz/fuzz_config
TEST_BINS += $(FUZZ_BINS)

-include $(shell find $(O)/fuzz/obj -name '*.d' 2>/dev/null)
endif
# Registered whether or not the runtime is here: without it run.sh reports each harness
# skipped, so make check counts them rather than dropping the suite.
ifeq ($(SANITIZE)$(filter-out $(UNAME_M),$(FUZZ_BUILD_ARCH)),)
TAP_SUITES += tests/fuzz/run.sh
endif
