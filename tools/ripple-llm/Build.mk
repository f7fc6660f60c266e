# ripple-llm: the CUDA C++ batch-1 decoder (Documentation/workloads.md).
# Built for Hopper (sm_90) plus PTX, so newer GPUs JIT it. Skipped where there is no nvcc,
# and in cross builds (the host's CUDA toolkit targets the host; build it on the board).
RIPPLE_LLM_NVCC := $(if $(CROSS_COMPILE),,$(shell command -v $(NVCC) 2>/dev/null))
ifneq ($(RIPPLE_LLM_NVCC),)
RIPPLE_LLM_NVFLAGS := -std=c++20 -O3 -lineinfo \
	-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
	-Xcompiler -Wall -I. -Iinclude

$(O)/obj/tools/ripple-llm/%.o: tools/ripple-llm/%.cu
	@mkdir -p $(@D)
	$(call msg,NVCC,$@)$(NVCC) $(RIPPLE_LLM_NVFLAGS) -MMD -MP -c $< -o $@

$(O)/bin/ripple-llm: $(O)/obj/tools/ripple-llm/ripple_llm.o
	@mkdir -p $(@D)
	$(call msg,LINK,$@)$(NVCC) $(RIPPLE_LLM_NVFLAGS) -o $@ $^ -lcublas -cudart static \
		-Xlinker -rpath=/usr/local/cuda/lib64
BINS += $(O)/bin/ripple-llm
endif

# The byte model's unit test needs no CUDA.
$(O)/tests/unit/ripple_llm_model_test: $(call objs,tests/unit/ripple_llm_model_test.cc)
$(O)/tests/unit/ripple_llm_model_test: LDLIBS := $(LDLIBS_GTEST)
$(O)/tests/unit/ripple_llm_model_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/ripple_llm_model_test
GTEST_SUITES += $(O)/tests/unit/ripple_llm_model_test
