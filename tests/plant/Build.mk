# Emulated interference plant (a TEST DOUBLE): the stand-in engine. Plant mode of the
# periodic tasks lives in tools/workloads/plant_mode.cc.
$(O)/bin/ripple-plant-engine: $(call objs,tests/plant/plant_engine_main.cc tests/plant/plant_engine.cc)
$(O)/bin/ripple-plant-engine: LDLIBS := -lrt
$(O)/bin/ripple-plant-engine: ; $(link_cxx)
BINS += $(O)/bin/ripple-plant-engine

# Stand-in engine (a TEST DOUBLE) speaking the real protocol: the integration tests, the
# grant round-trip benchmark, and ripple-bench's plant backend (make demo), which run it
# from bin/ like every program they start, never from the tests' tree.
$(O)/bin/ripple-standin-engine: $(call objs,tests/integration/agent_engine.cc) $(PROTOCOL_LIBS)
$(O)/bin/ripple-standin-engine: LDLIBS := -lfmt -lrt
$(O)/bin/ripple-standin-engine: ; $(link_cxx)
BINS += $(O)/bin/ripple-standin-engine

$(O)/tests/unit/plant_test: $(call objs,tests/unit/plant_test.cc tests/plant/plant_engine.cc \
	tools/workloads/plant_mode.cc tools/workloads/periodic.cc tools/workloads/pool.cc tools/workloads/cores.cc)
$(O)/tests/unit/plant_test: LDLIBS := $(LDLIBS_GTEST) -lrt
$(O)/tests/unit/plant_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/plant_test
GTEST_SUITES += $(O)/tests/unit/plant_test
