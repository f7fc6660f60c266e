# tests/cuhooks: the interposer's tests (no GPU). A fake libcuda.so.1 (TEST DOUBLE),
# driver-API test programs built against the real CUDA headers, a test-only grant server
# (TEST DOUBLE of the agent's engine side) and the GoogleTest suite that runs them.
ifneq ($(wildcard $(CUDA_INCLUDE)/cuda.h),)

$(O)/tests/cuhooks/fake/libcuda.so.1: tests/cuhooks/fake_cuda.c cuhooks/hook_list.h cuhooks/op_info.h
	@mkdir -p $(@D)
	$(call msg,CC-SO,$@)$(CC) -std=gnu11 -O2 -g -Wall -Wno-unused-parameter -fPIC -shared -fvisibility=hidden \
		-I. -isystem $(CUDA_INCLUDE) $< -o $@ -Wl,-soname,libcuda.so.1 -pthread

DRIVER_APP_DEPS := tests/cuhooks/driver_app.c include/ripple/cuhook.h $(O)/tests/cuhooks/fake/libcuda.so.1
$(O)/tests/cuhooks/driver_app: $(DRIVER_APP_DEPS)
	@mkdir -p $(@D)
	$(call msg,CC,$@)$(CC) -std=gnu11 -O2 -g -Wall -I. -isystem $(CUDA_INCLUDE) $< -o $@ \
		-L$(O)/tests/cuhooks/fake -l:libcuda.so.1 -ldl -pthread
$(O)/tests/cuhooks/driver_app_ptds: $(DRIVER_APP_DEPS)
	@mkdir -p $(@D)
	$(call msg,CC,$@)$(CC) -std=gnu11 -O2 -g -Wall -DCUDA_API_PER_THREAD_DEFAULT_STREAM -I. -isystem $(CUDA_INCLUDE) \
		$< -o $@ -L$(O)/tests/cuhooks/fake -l:libcuda.so.1 -ldl -pthread

# The dlsym trampoline's pass-through keeps RTLD_NEXT relative to the caller.
$(O)/tests/cuhooks/dlsym_next: tests/cuhooks/dlsym_next.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)$(CC) -std=gnu11 -O2 -g -Wall $< -o $@ -ldl

# The GoogleTest suite: one binary over files by theme, sharing one fixture
# (cuhook_fixture.h); the interception tests read the hook list, built on the CUDA headers.
CUHOOK_TEST_SRCS := tests/cuhooks/cuhook_fixture.cc tests/cuhooks/cuhook_intercept_test.cc \
	tests/cuhooks/cuhook_gating_test.cc tests/cuhooks/cuhook_works_test.cc \
	tests/cuhooks/cuhook_chunking_test.cc tests/cuhooks/cuhook_learning_test.cc tests/cuhooks/cuhook_timing_test.cc \
	tests/cuhooks/grant_server.cc
CXXFLAGS_tests_cuhooks_cuhook_intercept_test += -isystem $(CUDA_INCLUDE)
$(O)/tests/cuhooks/cuhook_test: $(call objs,$(CUHOOK_TEST_SRCS)) \
	$(O)/lib/libripple_cuprofile.a $(PROTOCOL_LIBS) $(COMMON_LIBS) \
	| $(O)/lib/libripple-cuhook.so $(O)/tests/cuhooks/driver_app $(O)/tests/cuhooks/driver_app_ptds \
	  $(O)/tests/cuhooks/dlsym_next $(O)/bin/ripple-run $(O)/bin/ripple-profile
$(O)/tests/cuhooks/cuhook_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_LOG)
$(O)/tests/cuhooks/cuhook_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/cuhooks/fake/libcuda.so.1 $(O)/tests/cuhooks/driver_app $(O)/tests/cuhooks/driver_app_ptds \
	$(O)/tests/cuhooks/dlsym_next $(O)/tests/cuhooks/cuhook_test
GTEST_SUITES += $(O)/tests/cuhooks/cuhook_test

# pace-R in a closed loop: the real agent, the interposer, llama.cpp's graph decoding on
# the fake driver (TAP, bash).
TAP_SUITES += tests/cuhooks/pace_closed_loop.sh

else
SKIPPED_SUITES += cuhooks/cuhook_test
SKIP_WHY_cuhooks/cuhook_test := no CUDA 12+ headers at $(CUDA_INCLUDE)/cuda.h (CUDA_INCLUDE=; tools/packaging/deps/debian-packages.txt says why Debian cannot provide them)
endif

# Pure unit tests: unit catalog, sequence matcher, model catalogs (ripple-profile).
$(O)/tests/unit/cuhook_profile_test: $(call objs,tests/unit/cuhook_profile_test.cc) $(O)/lib/libripple_cuprofile.a \
	$(O)/lib/libripple_modelcat.a $(O)/lib/libripple_common.a
$(O)/tests/unit/cuhook_profile_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_LOG)
$(O)/tests/unit/cuhook_profile_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/cuhook_profile_test
GTEST_SUITES += $(O)/tests/unit/cuhook_profile_test

# The chunk planner (pure).
$(O)/tests/unit/cuhook_chunker_test: $(call objs,tests/unit/cuhook_chunker_test.cc) $(O)/lib/libripple_cuprofile.a \
	$(O)/lib/libripple_common.a
$(O)/tests/unit/cuhook_chunker_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_LOG)
$(O)/tests/unit/cuhook_chunker_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/cuhook_chunker_test
GTEST_SUITES += $(O)/tests/unit/cuhook_chunker_test

# The pass learners (pure).
$(O)/tests/unit/cuhook_pass_learner_test: $(call objs,tests/unit/cuhook_pass_learner_test.cc) \
	$(O)/lib/libripple_cuprofile.a $(O)/lib/libripple_common.a
$(O)/tests/unit/cuhook_pass_learner_test: LDLIBS := $(LDLIBS_GTEST) $(LDLIBS_LOG)
$(O)/tests/unit/cuhook_pass_learner_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/cuhook_pass_learner_test
GTEST_SUITES += $(O)/tests/unit/cuhook_pass_learner_test
