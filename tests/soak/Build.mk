# tests/soak: the soak on the emulated interference plant (tests/soak/soak.sh). Its
# 5-minute version runs in `make check` (TAP: one case per 30 s window, one for the
# agent's memory); the hour is `O=build tests/soak/soak.sh 3600 100`.
ifeq ($(SANITIZE),)
TAP_SUITES += tests/soak/soak-ci.sh
endif
