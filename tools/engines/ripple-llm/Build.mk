# ripple-llm: the CUDA C++ batch-1 decoder (Documentation/workloads.md).
#   main.cc             the command line (CLI11) and the run loops (C++, g++)
#   engine.h engine.cu  the engine: memory, decode step, VLM request, graph, probes
#   checks.cu           --check: the fused kernels against the unfused ones
#   kernels.h kernels.cu  the unfused kernels; fused_kernels.cuh the fused decode kernels;
#   device.cuh          device helpers both use; common.h the bf16 type and error checks
#   model.h             the model shapes and the analytic byte model (host-only)
# Built for Hopper (sm_90) plus PTX, so newer GPUs JIT it. Skipped where there is no nvcc,
# and in cross builds (the host's CUDA toolkit targets the host; build it on the board).
RIPPLE_LLM_NVCC := $(if $(CROSS_COMPILE),,$(shell command -v $(NVCC) 2>/dev/null))
ifneq ($(RIPPLE_LLM_NVCC),)
RIPPLE_LLM_NVFLAGS := -std=c++20 -O3 -lineinfo \
	-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
	-Xcompiler -Wall -I. -Iinclude
RIPPLE_LLM_CUDA_INCLUDE := $(dir $(RIPPLE_LLM_NVCC))../include

$(O)/obj/tools/engines/ripple-llm/%.o: tools/engines/ripple-llm/%.cu
	@mkdir -p $(@D)
	$(call msg,NVCC,$@)$(NVCC) $(RIPPLE_LLM_NVFLAGS) -MMD -MP -c $< -o $@

CXXFLAGS_tools_engines_ripple-llm_main += -isystem $(RIPPLE_LLM_CUDA_INCLUDE)
RIPPLE_LLM_OBJS := $(call objs,tools/engines/ripple-llm/main.cc) \
	$(addprefix $(O)/obj/tools/engines/ripple-llm/,engine.o checks.o kernels.o)
$(O)/bin/ripple-llm: $(RIPPLE_LLM_OBJS)
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
