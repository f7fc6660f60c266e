#include "tools/cli/ripplectl/doctor.h"

#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/tracer/features.h"

namespace ripple::ctl {
namespace {

// The oldest kernel the tracer loads on: every program of tracer.bpf.c is loaded, and
// the newest thing they use is bpf_get_attach_cookie() in the uprobe programs (the
// PT index of a uprobe-mode task), 5.15. Before that: bpf_get_current_task_btf (5.11),
// BPF ring buffer, CAP_BPF and CAP_PERFMON (5.8), tp_btf programs (5.5).
constexpr int kMinMajor = 5, kMinMinor = 15;
constexpr long kTracefsMagic = 0x74726163;
constexpr long kBpffsMagic = 0xcafe4a11;

enum class Level { kOk, kWarn, kFail };

struct Args {
  std::string control_socket = "/run/ripple/control.sock";
  std::string engine_socket = "/run/ripple/engine.sock";
  double timeout_s = 2.0;
  bool no_agent = false;
  tracer::FeaturePaths paths;
};

class Report {
 public:
  void add(Level l, const std::string& what, const std::string& fix = {}) {
    static const char* kTag[] = {"ok  ", "WARN", "FAIL"};
    std::printf("  %s  %s\n", kTag[static_cast<int>(l)], what.c_str());
    if (!fix.empty() && l != Level::kOk) std::printf("        fix: %s\n", fix.c_str());
    ++count_[static_cast<int>(l)];
  }
  int finish() const {
    std::printf("%d ok, %d warnings, %d failures\n", count_[0], count_[1], count_[2]);
    return count_[2] > 0 ? 1 : count_[1] > 0 ? 2 : 0;
  }

 private:
  int count_[3] = {0, 0, 0};
};


void check_kernel(Report& r) {
  utsname u{};
  uname(&u);
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  const bool ok = major > kMinMajor || (major == kMinMajor && minor >= kMinMinor);
  r.add(ok ? Level::kOk : Level::kFail,
        fmt::format("kernel {} (the tracer needs {}.{} or newer: BPF cookies for uprobes 5.15, "
                    "task BTF 5.11, ring buffer and CAP_BPF 5.8, tp_btf 5.5)",
                    u.release, kMinMajor, kMinMinor),
        "boot a kernel >= 5.15 (Debian 12: linux-image-amd64 / linux-image-arm64, 6.1)");
}

// libbpf's feature probes load a tiny map or program: they need CAP_BPF.
void check_bpf_features(Report& r, bool privileged) {
  if (!privileged) {
    r.add(Level::kWarn, "BPF ring buffer and attach cookies not probed (needs root or CAP_BPF)",
          "run ripplectl doctor as root for the full check");
    return;
  }
  libbpf_print_fn_t old = libbpf_set_print(nullptr);
  const int ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr);
  const int cookie = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, nullptr);
  libbpf_set_print(old);
  r.add(ringbuf == 1 ? Level::kOk : Level::kFail,
        ringbuf == 1 ? "BPF ring buffer maps" : fmt::format("BPF ring buffer maps unavailable ({})", ringbuf),
        "the kernel needs CONFIG_BPF_SYSCALL=y and Linux >= 5.8");
  r.add(cookie == 1 ? Level::kOk : Level::kFail,
        cookie == 1 ? "bpf_get_attach_cookie() for uprobe programs"
                    : fmt::format("bpf_get_attach_cookie() unavailable ({})", cookie),
        "Linux >= 5.15 with CONFIG_UPROBE_EVENTS=y");
}

void check_filesystems(Report& r, const tracer::FeaturePaths& p) {
  if (access(p.btf.c_str(), R_OK) == 0) r.add(Level::kOk, fmt::format("kernel BTF {}", p.btf));
  else
    r.add(Level::kFail, fmt::format("kernel BTF {} not readable: {}", p.btf, std::strerror(errno)),
          "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's are)");

  if (!tracer::fs_is(p.tracefs, kTracefsMagic)) {
    r.add(Level::kFail, fmt::format("tracefs not mounted at {}", p.tracefs),
          fmt::format("mount -t tracefs tracefs {}  (systemd: systemctl start sys-kernel-tracing.mount)", p.tracefs));
  } else if (access((p.tracefs + "/events").c_str(), X_OK) != 0 && errno == EACCES) {
    r.add(Level::kWarn, fmt::format("tracefs at {}: syscall tracepoints not checked (tracefs is root's)", p.tracefs),
          "run ripplectl doctor as root for the full check");
  } else if (!tracer::has_syscall_tracepoint("sys_enter_clock_nanosleep", p)) {
    r.add(Level::kFail, fmt::format("tracefs at {} has no syscall tracepoints", p.tracefs),
          "use a kernel with CONFIG_FTRACE_SYSCALLS=y, and run as root");
  } else {
    r.add(Level::kOk, fmt::format("tracefs at {} with syscall tracepoints", p.tracefs));
  }

  if (tracer::fs_is(p.bpffs, kBpffsMagic)) r.add(Level::kOk, fmt::format("bpffs at {}", p.bpffs));
  else
    r.add(Level::kFail, fmt::format("bpffs not mounted at {} (the tracer pins its maps there)", p.bpffs),
          fmt::format("mount -t bpf bpf {}  (systemd: systemctl start sys-fs-bpf.mount)", p.bpffs));

  if (access(p.uprobe_pmu.c_str(), R_OK) == 0) r.add(Level::kOk, "uprobes (for tasks in uprobe mode)");
  else
    r.add(Level::kWarn, fmt::format("uprobes unavailable ({} missing): only period-wait tasks can be traced",
                                    p.uprobe_pmu),
          "use a kernel with CONFIG_UPROBE_EVENTS=y for mode = \"uprobe\"");

  std::ifstream lock("/sys/kernel/security/lockdown");
  std::string mode;
  if (lock && std::getline(lock, mode)) {
    const bool conf = mode.find("[confidentiality]") != std::string::npos;
    r.add(conf ? Level::kFail : Level::kOk,
          conf ? "kernel lockdown is 'confidentiality': BPF may not read kernel memory"
               : fmt::format("kernel lockdown: {}", mode),
          "boot with lockdown=integrity or none (secure boot may force it)");
  }
}

void check_caps(Report& r, bool* privileged) {
  const unsigned long long caps = tracer::effective_caps();
  auto has = [caps](int c) { return (caps >> c) & 1ULL; };
  const bool bpf = has(39) && has(38);  // CAP_BPF, CAP_PERFMON
  *privileged = bpf || has(21);         // or CAP_SYS_ADMIN
  if (*privileged)
    r.add(Level::kOk, fmt::format("caller (uid {}) may load and attach BPF (CapEff {:016x})", geteuid(), caps));
  else
    r.add(Level::kWarn,
          fmt::format("caller (uid {}) cannot load BPF (CapEff {:016x} lacks CAP_BPF+CAP_PERFMON); "
                      "the agent itself needs them",
                      geteuid(), caps),
          "run ripple-agent as root or through ripple-agent.service, which grants them");
}

void check_gpu(Report& r) {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) {
    r.add(Level::kWarn, "CUDA driver libcuda.so.1 not found: GPU gating unavailable",
          "install the NVIDIA driver (its libcuda.so.1) where inference runs on the GPU");
  } else {
    using DriverVersion = int (*)(int*);
    int v = 0;
    auto fn = reinterpret_cast<DriverVersion>(dlsym(h, "cuDriverGetVersion"));
    const bool got = fn != nullptr && fn(&v) == 0;
    r.add(Level::kOk, got ? fmt::format("CUDA driver libcuda.so.1 (CUDA {}.{})", v / 1000, v % 1000 / 10)
                          : std::string("CUDA driver libcuda.so.1 loadable"));
    dlclose(h);
  }
  // The interposer, where ripple-run looks for it: ../lib beside this program.
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : ".";
  dir = dir.substr(0, dir.find_last_of('/'));
  std::string hook = dir + "/../lib/libripple-cuhook.so";
  if (char real[PATH_MAX]; realpath(hook.c_str(), real) != nullptr) hook = real;
  if (access(hook.c_str(), R_OK) == 0) r.add(Level::kOk, fmt::format("interposer {}", hook));
  else
    r.add(Level::kWarn, fmt::format("interposer libripple-cuhook.so not at {}: ripple-run cannot gate", hook),
          "build with the CUDA headers (/usr/local/cuda/include) and reinstall, or set RIPPLE_CUHOOK_LIB");
}

int connect_unix(const std::string& path, double timeout_s, std::string* err) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    *err = "path too long";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = std::strerror(errno);
    return -1;
  }
  timeval tv{static_cast<time_t>(timeout_s), static_cast<suseconds_t>((timeout_s - static_cast<long>(timeout_s)) * 1e6)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *err = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

void check_agent(Report& r, const Args& a) {
  auto start = [](const char* option) {
    return fmt::format("start it: systemctl start ripple-agent (or ripple-agent -c /etc/ripple/ripple.toml); "
                       "journalctl -u ripple-agent says why it stopped; {} PATH if it listens elsewhere",
                       option);
  };
  std::string err;
  const int fd = connect_unix(a.control_socket, a.timeout_s, &err);
  if (fd < 0) {
    r.add(Level::kFail, fmt::format("agent control socket {}: cannot connect: {}", a.control_socket, err),
          start("--socket"));
  } else {
    std::vector<char> buf(4 << 20);
    ssize_t n = -1;
    if (::send(fd, "status", 6, MSG_NOSIGNAL) == 6) n = ::recv(fd, buf.data(), buf.size(), 0);
    const int rerr = errno;
    ::close(fd);
    const auto j = n > 0 ? nlohmann::json::parse(buf.data(), buf.data() + n, nullptr, false) : nlohmann::json();
    if (n <= 0) {
      r.add(Level::kFail,
            fmt::format("agent control socket {}: no status reply within {} s ({})", a.control_socket, a.timeout_s,
                        n == 0 ? "connection closed" : std::strerror(rerr)),
            "the agent is hung or overloaded: systemctl restart ripple-agent; journalctl -u ripple-agent");
    } else if (!j.is_object() || !j.contains("policy") || !j.contains("tasks")) {
      r.add(Level::kFail, fmt::format("agent control socket {}: the reply is not an agent's status", a.control_socket),
            "another program listens there: check agent.control_socket");
    } else {
      const bool tracer = j.contains("tracer") && j["tracer"].value("attached", false);
      r.add(Level::kOk, fmt::format("agent at {}: policy {}, up {:.0f} s, {} task(s), {} engine(s), tracer {}",
                                    a.control_socket, j["policy"].get<std::string>(), j.value("uptime_s", 0.0),
                                    j["tasks"].size(), j.contains("engines") ? j["engines"].size() : 0,
                                    tracer ? "attached" : "not loaded (no [[task]] configured)"));
    }
  }
  struct stat st {};
  const int efd = connect_unix(a.engine_socket, a.timeout_s, &err);
  if (efd < 0) {
    r.add(Level::kFail, fmt::format("agent engine socket {}: cannot connect: {}", a.engine_socket, err),
          start("--engine-socket"));
    return;
  }
  ::close(efd);
  const bool world = ::stat(a.engine_socket.c_str(), &st) == 0 && (st.st_mode & 0002);
  r.add(Level::kOk, fmt::format("agent engine socket {} accepts connections{}", a.engine_socket,
                                world ? "" : " (not world-connectable: only its owner's engines can reach it)"));
}

int run_doctor(const Args& a) {
  std::printf("ripplectl doctor: can Ripple run here?\n");
  Report r;
  bool privileged = false;
  check_kernel(r);
  check_caps(r, &privileged);
  check_bpf_features(r, privileged);
  check_filesystems(r, a.paths);
  check_gpu(r);
  if (!a.no_agent) check_agent(r, a);
  return r.finish();
}

}  // namespace

void add_doctor_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<Args>();
  auto* d = app.add_subcommand("doctor",
                               "check that this machine can run Ripple; exit 0 all good, 1 failures, 2 warnings only");
  d->add_option("--socket", args->control_socket, "the agent's control socket")->capture_default_str();
  d->add_option("--engine-socket", args->engine_socket, "the agent's engine socket")->capture_default_str();
  d->add_option("--timeout", args->timeout_s, "seconds to wait for the agent")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  d->add_flag("--no-agent", args->no_agent, "skip the agent's sockets (before it is installed or started)");
  d->add_option("--tracefs", args->paths.tracefs, "where tracefs should be mounted")->capture_default_str();
  d->add_option("--bpffs", args->paths.bpffs, "where bpffs should be mounted")->capture_default_str();
  d->add_option("--btf", args->paths.btf, "the kernel's BTF")->capture_default_str();
  d->callback([args, exit_code] { *exit_code = run_doctor(*args); });
}

}  // namespace ripple::ctl
