# Emulated interference plant (a TEST DOUBLE): the stand-in engine. Plant mode of the
# periodic tasks lives in tools/workloads/plant_mode.cc.
$(O)/bin/ripple-plant-engine: $(call objs,tests/plant/plant_engine_main.cc tests/plant/plant_engine.cc)
$(O)/bin/ripple-plant-engine: LDLIBS := -lrt
$(O)/bin/ripple-plant-engine: ; $(link_cxx)
BINS += $(O)/bin/ripple-plant-engine
