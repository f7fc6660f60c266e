# ripple-run: runs a CUDA program under libripple-cuhook.so (LD_PRELOAD, NVTX injection).
$(O)/bin/ripple-run: $(call objs,tools/cli/ripple-run/main.cc) $(O)/lib/libripple_cuprofile.a $(O)/lib/libripple_common.a
$(O)/bin/ripple-run: LDLIBS := $(LDLIBS_LOG)
$(O)/bin/ripple-run: ; $(link_cxx)
BINS += $(O)/bin/ripple-run
