# BPF programs: one unit per feature, each with its skeleton.
BPF_OBJS += $(O)/bpf/tracer.bpf.o
SKELETONS += $(O)/include/ripple/skel/tracer.skel.h
