# Robot CPU task suite (issue 4): ordinary periodic programs that know nothing of
# Ripple. Documentation/workloads.md describes each.

WORKLOADS_COMMON := tools/workloads/periodic.cc tools/workloads/plant_mode.cc tools/workloads/pool.cc \
	tools/workloads/cores.cc
# -isystem: OpenCV 4.6's headers warn under C++20.
OPENCV_CFLAGS := -isystem /usr/include/opencv4
WORKLOAD_LIBS_CV := -lopencv_calib3d -lopencv_features2d -lopencv_imgproc -lopencv_core -pthread
# Cross builds: Debian 12's libopencv-{features2d,calib3d}-dev:arm64 cannot be installed
# beside the native ones (tools/packaging/deps/debian-packages-arm64.txt): link those two by soname.
ifneq ($(CROSS_COMPILE),)
WORKLOAD_LIBS_CV := -l:libopencv_calib3d.so.406 -l:libopencv_features2d.so.406 -lopencv_imgproc \
	-lopencv_core -pthread
endif

CXXFLAGS_tools_workloads_sgm += $(OPENCV_CFLAGS)
CXXFLAGS_tools_workloads_orb += $(OPENCV_CFLAGS)
CXXFLAGS_tools_workloads_images += $(OPENCV_CFLAGS)

$(O)/bin/ripple-costmap: $(call objs,tools/workloads/costmap.cc $(WORKLOADS_COMMON))
$(O)/bin/ripple-costmap: LDLIBS := -pthread -lrt
$(O)/bin/ripple-costmap: ; $(link_cxx)

$(O)/bin/ripple-kdnn: $(call objs,tools/workloads/kdnn.cc $(WORKLOADS_COMMON))
$(O)/bin/ripple-kdnn: LDLIBS := -pthread -lrt
$(O)/bin/ripple-kdnn: ; $(link_cxx)

$(O)/bin/ripple-sgm: $(call objs,tools/workloads/sgm.cc tools/workloads/images.cc $(WORKLOADS_COMMON))
$(O)/bin/ripple-sgm: LDLIBS := $(WORKLOAD_LIBS_CV) -lrt
$(O)/bin/ripple-sgm: ; $(link_cxx)

$(O)/bin/ripple-orb: $(call objs,tools/workloads/orb.cc tools/workloads/images.cc $(WORKLOADS_COMMON))
$(O)/bin/ripple-orb: LDLIBS := $(WORKLOAD_LIBS_CV) -lrt
$(O)/bin/ripple-orb: ; $(link_cxx)

$(O)/bin/ripple-control: $(call objs,tools/workloads/control.cc $(WORKLOADS_COMMON))
$(O)/bin/ripple-control: LDLIBS := -pthread -lrt
$(O)/bin/ripple-control: ; $(link_cxx)

BINS += $(O)/bin/ripple-costmap $(O)/bin/ripple-kdnn $(O)/bin/ripple-sgm $(O)/bin/ripple-orb \
	$(O)/bin/ripple-control

# The grid passes are written to vectorize; -O3 lets gcc do it.
CXXFLAGS_tools_workloads_costmap += -O3

# Mixes as data (tools/workloads/mixes/*.toml) and their launcher.
$(O)/bin/ripple-mix: $(call objs,tools/workloads/mix_main.cc tools/workloads/mix.cc tools/workloads/cores.cc)
$(O)/bin/ripple-mix: LDLIBS :=
$(O)/bin/ripple-mix: ; $(link_cxx)
BINS += $(O)/bin/ripple-mix

$(O)/tests/unit/workloads_test: $(call objs,tests/unit/workloads_test.cc tools/workloads/mix.cc $(WORKLOADS_COMMON))
$(O)/tests/unit/workloads_test: LDLIBS := $(LDLIBS_GTEST) -lrt
$(O)/tests/unit/workloads_test: ; $(link_cxx)
TEST_BINS += $(O)/tests/unit/workloads_test
GTEST_SUITES += $(O)/tests/unit/workloads_test

TAP_SUITES += tests/workloads/cli.t
