// The systemd service manager's notification protocol (sd_notify(3)) for ripple-agent
// under `Type=notify`: READY=1 once the sockets listen and the tracer is attached,
// WATCHDOG=1 from the event loop when the unit sets WatchdogSec=, STOPPING=1 on the
// way out. Outside systemd ($NOTIFY_SOCKET unset) every call does nothing.
//
// Through libsystemd's sd_notify where the build found libsystemd (RIPPLE_HAVE_LIBSYSTEMD),
// otherwise the same datagram written by hand to $NOTIFY_SOCKET: the shipped unit says
// Type=notify, so an agent built without libsystemd-dev must still report readiness.
#pragma once

#include <cstdint>
#include <string_view>

namespace ripple::daemon::notify {

// Sends `state` ("READY=1\nSTATUS=...") to the service manager. Returns true if it was
// sent, false outside systemd or on error (never fatal: the agent runs the same).
bool send(std::string_view state);

// How often to send WATCHDOG=1: half of $WATCHDOG_USEC when the watchdog is enabled for
// this process ($WATCHDOG_PID unset or ours), 0 otherwise. In nanoseconds.
std::int64_t watchdog_interval_ns();

// Whether this binary was linked with libsystemd.
bool linked_with_libsystemd();

}  // namespace ripple::daemon::notify
