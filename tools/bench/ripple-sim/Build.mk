# tools/bench/ripple-sim: the discrete-event simulator (issue 13, Documentation/sim.md). It links
# the agent's pure libraries (pricing, admission, policies) and nothing else of the agent.

SIM_SRCS := tools/bench/ripple-sim/platform.cc tools/bench/ripple-sim/tasks.cc tools/bench/ripple-sim/engines.cc \
	tools/bench/ripple-sim/runner.cc tools/bench/ripple-sim/preset.cc tools/bench/ripple-sim/sweep.cc tools/bench/ripple-sim/report.cc \
	tools/bench/ripple-sim/calibrate.cc

# cuhooks/chunker.cc: the interposer's chunk planner (pure), for sub-layer engines.
$(O)/lib/libripple_sim.a: $(call objs,$(SIM_SRCS) cuhooks/chunker.cc)
LIBS += $(O)/lib/libripple_sim.a
SIM_LIBS := $(O)/lib/libripple_sim.a $(ADMISSION_LIBS)

$(O)/bin/ripple-sim: $(call objs,tools/bench/ripple-sim/main.cc) $(SIM_LIBS)
$(O)/bin/ripple-sim: LDLIBS := -lfmt
$(O)/bin/ripple-sim: ; $(link_cxx)
BINS += $(O)/bin/ripple-sim

SIM_TESTS := $(wildcard tests/unit/sim_*_test.cc)
$(O)/tests/unit/sim_test: $(call objs,$(SIM_TESTS)) $(SIM_LIBS)
$(O)/tests/unit/sim_test: LDLIBS := -lfmt $(LDLIBS_GTEST)
$(O)/tests/unit/sim_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/sim_test
GTEST_SUITES += $(O)/tests/unit/sim_test

# The table is ripple-bench's own rendering of the results.json, and runs are deterministic.
TAP_SUITES += tools/bench/ripple-sim/render_check.sh
# The admission trace: ripple-sim --trace read back by trace_report.py (TAP).
TAP_SUITES += tests/bench/trace_report_test.py
# calibrate end to end against the plant (a TEST DOUBLE with a known slope), ~45 s.
TAP_SUITES += tests/integration/sim_calibrate.sh
# grant_costs.py: the per-grant costs measured from GPU runs, on hand-made results (TAP).
TAP_SUITES += tests/bench/grant_costs_test.py
# slope_bias.py: the two slopes of an admission trace's jobs, on hand-made traces (TAP).
TAP_SUITES += tests/bench/slope_bias_test.py
