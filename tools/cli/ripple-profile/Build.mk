# ripple-profile: unit catalogs from model directories and recorded kernel sequences.
$(O)/lib/libripple_modelcat.a: $(call objs,tools/cli/ripple-profile/model_catalog.cc tools/cli/ripple-profile/gguf_catalog.cc)
LIBS += $(O)/lib/libripple_modelcat.a

$(O)/bin/ripple-profile: $(call objs,tools/cli/ripple-profile/main.cc) $(O)/lib/libripple_modelcat.a \
	$(O)/lib/libripple_cuprofile.a $(O)/lib/libripple_common.a
$(O)/bin/ripple-profile: LDLIBS := $(LDLIBS_LOG)
$(O)/bin/ripple-profile: ; $(link_cxx)
BINS += $(O)/bin/ripple-profile
