#include "agent/tracer/tracer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "ripple/log.h"
#include "agent/tracer/elf_symbols.h"
#include "agent/tracer/features.h"
#include "agent/tracer/threads.h"
#include "ripple/skel/tracer.skel.h"

static_assert(sizeof(ripple_job_event) == 64, "ripple_job_event layout");
static_assert(sizeof(ripple_pt_config) == 48, "ripple_pt_config layout");
static_assert(sizeof(ripple_pt_stats) == 96, "ripple_pt_stats layout");
static_assert(sizeof(ripple_thread) == 80, "ripple_thread layout");
static_assert(sizeof(ripple_exe_key) == 16, "ripple_exe_key layout");

namespace ripple::tracer {
namespace {

// Period-wait syscalls: tracepoint name -> RIPPLE_WAIT_* bit, and the syscall
// number on this architecture (for threads found asleep at attach time).
struct WaitSyscall {
  const char* name;
  uint32_t bit;
  long nr;  // -1 where this architecture lacks the syscall
};

// The legacy waits aarch64 lacks (it has only epoll_pwait, ppoll, pselect6), and
// futex_wait, which headers older than Linux 6.7 lack: no number, never found asleep in.
#ifndef __NR_epoll_wait
#define __NR_epoll_wait (-1)
#endif
#ifndef __NR_poll
#define __NR_poll (-1)
#endif
#ifndef __NR_select
#define __NR_select (-1)
#endif
#ifndef __NR_futex_wait
#define __NR_futex_wait (-1)
#endif

// RIPPLE_WAIT_SYSCALLS (include/ripple/bpf/tracer.h), the list the BPF program hooks.
#define RIPPLE_WAIT_SYSCALL_ENTRY(name, bit) {#name, bit, __NR_##name},
const WaitSyscall kWaitSyscalls[] = {RIPPLE_WAIT_SYSCALLS(RIPPLE_WAIT_SYSCALL_ENTRY, RIPPLE_WAIT_SYSCALL_ENTRY)};
#undef RIPPLE_WAIT_SYSCALL_ENTRY

// The syscall a sleeping thread is in (first field of /proc/TID/syscall).
long current_syscall(pid_t tgid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tgid) + "/task/" + std::to_string(tid) +
                   "/syscall");
  long nr = -1;
  if (!(in >> nr)) return -1;
  return nr;
}

size_t round_ring_size(size_t bytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t size = page;
  while (size < bytes) size <<= 1;
  return size;
}

}  // namespace

namespace {

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
  std::string_view line(buf, n > 0 ? std::min<size_t>(n, sizeof(buf) - 1) : 0);
  while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  auto lvl = level == LIBBPF_WARN ? spdlog::level::warn : spdlog::level::debug;
  log::logger().log(lvl, "libbpf: {}", line);
  return n;
}

}  // namespace

void route_libbpf_log() { libbpf_set_print(libbpf_print); }

struct Tracer::Impl {
  struct SkelDeleter {
    void operator()(tracer_bpf* s) const { tracer_bpf__destroy(s); }
  };
  struct RbDeleter {
    void operator()(ring_buffer* rb) const { ring_buffer__free(rb); }
  };
  std::unique_ptr<tracer_bpf, SkelDeleter> skel;
  std::unique_ptr<ring_buffer, RbDeleter> rb;
  std::vector<bpf_link*> links;
  int lock_fd = -1;
  bool pinned = false;
  int ncpus = 1;

  ~Impl() {
    for (auto* l : links) bpf_link__destroy(l);
    links.clear();
    rb.reset();
    if (pinned && skel) bpf_object__unpin_maps(skel->obj, nullptr);
    skel.reset();
    if (lock_fd >= 0) close(lock_fd);
  }
};

Tracer::Tracer(Options opts, Callback cb)
    : opts_(std::move(opts)), cb_(std::move(cb)), impl_(std::make_unique<Impl>()) {}

Tracer::~Tracer() {
  bool pinned = impl_ && impl_->pinned;
  impl_.reset();  // detaches, unpins, closes the maps
  if (pinned) rmdir(opts_.pin_dir.c_str());
}

namespace {

Status take_lock(const std::string& path, int& fd_out) {
  auto dir = path.substr(0, path.rfind('/'));
  mkdir(dir.c_str(), 0755);
  // Owner-only: flock works through a read-only descriptor, so a lock any user can open
  // is one any user can hold, keeping the agent from starting. A lock file left 0644 by
  // an older build is narrowed; one owned by another user is not ours to use.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return make_errno_error(-errno, "cannot open lock {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077 && fchmod(fd, 0600) != 0)) {
    close(fd);
    return make_error("lock {} is not a file of uid {} that only it can open (uid {}, mode {:o})", path, geteuid(),
                      st.st_uid, st.st_mode & 07777);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return make_error("another Ripple tracer is running (lock {} is held)", path);
  }
  fd_out = fd;
  return Status::Ok();
}

int handle_event(void* ctx, void* data, size_t size) {
  if (size < sizeof(ripple_job_event)) return 0;
  auto* self_cb = static_cast<Callback*>(ctx);
  const auto* e = static_cast<const ripple_job_event*>(data);
  JobEvent ev{};
  switch (e->kind) {
    case RIPPLE_EV_RELEASE: ev.kind = JobEventKind::kRelease; break;
    case RIPPLE_EV_COMPLETE: ev.kind = JobEventKind::kComplete; break;
    case RIPPLE_EV_ABORT: ev.kind = JobEventKind::kAbort; break;
    default: return 0;  // a kind this build does not know
  }
  ev.pt = e->pt;
  ev.tid = static_cast<pid_t>(e->tid);
  ev.tgid = static_cast<pid_t>(e->tgid);
  ev.seq = e->seq;
  ev.ts_ns = e->ts;
  ev.release_ns = e->release_ts;
  ev.start_ns = e->start_ts;
  ev.response_ns = ev.kind == JobEventKind::kComplete ? e->ts - e->release_ts : 0;
  ev.oncpu_ns = e->oncpu_ns;
  ev.preemptions = e->preemptions;
  ev.deadline_miss = e->flags & RIPPLE_EVF_MISS;
  ev.no_wakeup = e->flags & RIPPLE_EVF_NO_WAKEUP;
  (*self_cb)(ev);
  return 0;
}

}  // namespace

Result<std::unique_ptr<Tracer>> Tracer::create(Options opts, Callback cb) {
  if (opts.pts.empty()) return make_error("no protected task to trace");
  if (opts.pts.size() > RIPPLE_MAX_PTS)
    return make_error("{} protected tasks given; at most {}", opts.pts.size(), RIPPLE_MAX_PTS);

  FeatureNeeds needs;
  for (const auto& pt : opts.pts) needs.uprobes |= pt.mode == Mode::kUprobe;
  if (auto s = probe_features(needs); !s) return s.error();

  std::set<std::string> comms;
  std::set<std::pair<uint64_t, uint32_t>> exes;
  uint32_t wait_union = 0;
  for (auto& pt : opts.pts) {
    if (auto s = validate_spec(pt); !s) return s.error();
    if (pt.match == MatchKind::kComm && !comms.insert(pt.comm).second)
      return make_error("comm '{}' names two protected tasks", pt.comm);
    if (pt.match == MatchKind::kExe) {
      auto id = executable_id(pt.exe);
      if (!exes.insert({id->ino, id->dev}).second)
        return make_error("executable {} names two protected tasks", pt.exe);
    }
    if (pt.mode == Mode::kPeriodWait) wait_union |= pt.wait_mask;
  }
  for (const auto& pt : opts.pts) {
    if (pt.mode != Mode::kPeriodWait) continue;
    for (const auto& [name, bit] : wait_kinds()) {
      if (!(pt.wait_mask & bit)) continue;
      bool any = false;
      for (const auto& w : kWaitSyscalls)
        any |= (w.bit == bit) && has_syscall_tracepoint(std::string("sys_enter_") + w.name);
      if (!any) return make_error("kernel has no syscall tracepoint for period wait '{}'", name);
    }
  }

  route_libbpf_log();
  std::unique_ptr<Tracer> t(new Tracer(std::move(opts), std::move(cb)));
  Impl& im = *t->impl_;
  const Options& o = t->opts_;

  if (!o.pin_dir.empty()) {
    if (auto s = take_lock(o.lock_path, im.lock_fd); !s) return s.error();
  }

  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!o.pin_dir.empty()) open_opts.pin_root_path = o.pin_dir.c_str();
  im.skel.reset(tracer_bpf__open_opts(&open_opts));
  if (!im.skel) return make_errno_error(-errno, "failed to open BPF object: {}", -errno);
  tracer_bpf* skel = im.skel.get();
  skel->rodata->cfg_self_tgid = static_cast<__u32>(getpid());
  skel->rodata->cfg_wakeup = o.wakeup_consumer ? 1 : 0;
  bpf_map__set_max_entries(skel->maps.events, static_cast<__u32>(round_ring_size(o.ring_bytes)));

  if (o.pin_dir.empty()) {
    bpf_map__set_pin_path(skel->maps.drops, nullptr);
    bpf_map__set_pin_path(skel->maps.pt_config, nullptr);
    bpf_map__set_pin_path(skel->maps.pt_stats, nullptr);
    bpf_map__set_pin_path(skel->maps.pt_threads, nullptr);
  } else {
    // We hold the lock, so pins left behind belong to a tracer that died:
    // start from fresh maps rather than reusing stale state.
    mkdir(o.pin_dir.c_str(), 0700);
    for (const char* m : {"drops", "pt_config", "pt_stats", "pt_threads"})
      unlink((o.pin_dir + "/" + m).c_str());
  }

  // Load only the period-wait programs some PT uses and the kernel has.
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel->obj) {
    std::string name = bpf_program__name(prog);
    std::string sc;
    if (name.rfind("enter_", 0) == 0) sc = name.substr(6);
    else if (name.rfind("exit_", 0) == 0) sc = name.substr(5);
    else continue;
    bool want = false;
    for (const auto& w : kWaitSyscalls)
      if (sc == w.name) want = (wait_union & w.bit) && has_syscall_tracepoint("sys_enter_" + sc);
    bpf_program__set_autoload(prog, want);
  }
  bool any_uprobe = needs.uprobes;
  bpf_program__set_autoload(skel->progs.uprobe_release, any_uprobe);
  bpf_program__set_autoload(skel->progs.uretprobe_complete, any_uprobe);
  bpf_program__set_autoload(skel->progs.uprobe_complete, any_uprobe);

  if (int err = tracer_bpf__load(skel); err)
    return make_errno_error(err, "failed to load BPF programs: {} ({})", err, std::strerror(-err));
  im.pinned = !o.pin_dir.empty();
  im.ncpus = libbpf_num_possible_cpus();

  // Configuration and match tables.
  for (uint32_t i = 0; i < o.pts.size(); i++) {
    const PtSpec& pt = o.pts[i];
    ripple_pt_config cfg{};
    std::strncpy(cfg.name, pt.name.c_str(), sizeof(cfg.name) - 1);
    cfg.deadline_ns = pt.deadline_ns;
    cfg.active = 1;
    cfg.mode = pt.mode == Mode::kUprobe ? RIPPLE_MODE_UPROBE : RIPPLE_MODE_PERIOD_WAIT;
    cfg.match = pt.match == MatchKind::kPid   ? RIPPLE_MATCH_PID
                : pt.match == MatchKind::kExe ? RIPPLE_MATCH_EXE
                                              : RIPPLE_MATCH_COMM;
    cfg.wait_mask = pt.wait_mask;
    cfg.uid = pt.uid.value_or(0);
    cfg.any_uid = pt.uid.has_value() ? 0 : 1;
    if (bpf_map__update_elem(skel->maps.pt_config, &i, sizeof(i), &cfg, sizeof(cfg), BPF_ANY))
      return make_errno_error(-errno, "failed to write pt_config: {}", -errno);
    if (pt.match == MatchKind::kExe) {
      auto id = executable_id(pt.exe);
      ripple_exe_key key{id->ino, id->dev, 0};
      if (bpf_map__update_elem(skel->maps.match_exe, &key, sizeof(key), &i, sizeof(i), BPF_ANY))
        return make_errno_error(-errno, "failed to write match_exe: {}", -errno);
    } else if (pt.match == MatchKind::kComm) {
      ripple_comm_key key{};
      std::strncpy(key.comm, pt.comm.c_str(), sizeof(key.comm) - 1);
      if (bpf_map__update_elem(skel->maps.match_comm, &key, sizeof(key), &i, sizeof(i), BPF_ANY))
        return make_errno_error(-errno, "failed to write match_comm: {}", -errno);
    }
  }

  // Attach. Tracepoints and tp_btf first, so that threads created while we
  // scan /proc below are followed by the fork handler.
  bpf_object__for_each_program(prog, skel->obj) {
    if (!bpf_program__autoload(prog)) continue;
    if (bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE) continue;  // uprobes: per PT below
    bpf_link* link = bpf_program__attach(prog);
    if (!link)
      return make_errno_error(-errno, "failed to attach {}: {}", bpf_program__name(prog), -errno);
    im.links.push_back(link);
  }
  for (uint32_t i = 0; i < o.pts.size(); i++) {
    const PtSpec& pt = o.pts[i];
    if (pt.mode != Mode::kUprobe) continue;
    auto attach = [&](bpf_program* p, const std::string& target, bool ret) -> Status {
      auto colon = target.rfind(':');
      std::string path = target.substr(0, colon), sym = target.substr(colon + 1);
      LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = i, .retprobe = ret, .func_name = sym.c_str());
      bpf_link* link = bpf_program__attach_uprobe_opts(p, -1, path.c_str(), 0, &uo);
      if (!link)
        return make_errno_error(-errno, "failed to attach uprobe to {} in {}: {}", sym, path,
                                -errno);
      im.links.push_back(link);
      return Status::Ok();
    };
    if (auto s = attach(skel->progs.uprobe_release, pt.release_symbol, false); !s) return s.error();
    if (pt.complete_symbol.empty()) {
      if (auto s = attach(skel->progs.uretprobe_complete, pt.release_symbol, true); !s)
        return s.error();
    } else if (auto s = attach(skel->progs.uprobe_complete, pt.complete_symbol, false); !s) {
      return s.error();
    }
  }

  // Seed the thread map with what already runs.
  std::vector<std::optional<FileId>> exe_ids;
  for (const auto& pt : o.pts)
    exe_ids.push_back(pt.match == MatchKind::kExe ? std::optional<FileId>(*executable_id(pt.exe))
                                                  : std::nullopt);
  pid_t self = getpid();
  int threads_fd = bpf_map__fd(skel->maps.pt_threads);
  int stats_fd = bpf_map__fd(skel->maps.pt_stats);
  for_each_thread([&](const ThreadInfo& th) {
    if (th.tgid == self) return;
    for (uint32_t i = 0; i < o.pts.size(); i++) {
      const PtSpec& pt = o.pts[i];
      bool match = (pt.match == MatchKind::kPid && th.tgid == pt.pid) ||
                   (pt.match == MatchKind::kExe && th.exe && *th.exe == *exe_ids[i]) ||
                   (pt.match == MatchKind::kComm && th.comm == pt.comm);
      if (!match) continue;
      if (pt.match != MatchKind::kPid && pt.uid && th.euid != *pt.uid) {
        ripple_pt_stats st{};
        if (bpf_map_lookup_elem(stats_fd, &i, &st) == 0) {
          ++st.uid_refused;
          bpf_map_update_elem(stats_fd, &i, &st, BPF_ANY);
        }
        continue;
      }
      ripple_thread ts{};
      ts.pt = i;
      ts.tgid = static_cast<__u32>(th.tgid);
      ts.state = RIPPLE_TS_UNKNOWN;
      if (pt.mode == Mode::kPeriodWait) {
        // Asleep in its period wait right now: its next wake-up is a release.
        long nr = current_syscall(th.tgid, th.tid);
        for (const auto& w : kWaitSyscalls)
          if (nr >= 0 && w.nr == nr && (pt.wait_mask & w.bit) && w.bit != RIPPLE_WAIT_FUTEX)
            ts.state = RIPPLE_TS_WAITING;
      }
      __u32 tid = static_cast<__u32>(th.tid);
      int err = bpf_map_update_elem(threads_fd, &tid, &ts, BPF_NOEXIST);
      if (err == 0 || errno != EEXIST) {
        ripple_pt_stats st{};
        if (bpf_map_lookup_elem(stats_fd, &i, &st) == 0) {
          // Seeding races with the BPF side's atomic adds only for threads
          // forked meanwhile; those are counted there.
          (err == 0 ? st.threads : st.attach_failures)++;
          bpf_map_update_elem(stats_fd, &i, &st, BPF_EXIST);
        }
      }
      break;
    }
  });

  im.rb.reset(ring_buffer__new(bpf_map__fd(skel->maps.events), handle_event, &t->cb_, nullptr));
  if (!im.rb) return make_errno_error(-errno, "failed to create ring buffer: {}", -errno);
  RIPPLE_LOG_DEBUG("tracer attached: {} protected task(s), pins in {}", o.pts.size(),
                   o.pin_dir.empty() ? "(none)" : o.pin_dir);
  return t;
}

int Tracer::ring_fd() const { return ring_buffer__epoll_fd(impl_->rb.get()); }

Result<int> Tracer::poll(int timeout_ms) {
  int n = ring_buffer__poll(impl_->rb.get(), timeout_ms);
  if (n == -EINTR) return 0;
  if (n < 0) return make_errno_error(n, "failed to poll ring buffer: {}", n);
  if (n == 0 && !opts_.wakeup_consumer) return consume();  // nothing wakes epoll
  return n;
}

Result<int> Tracer::consume() {
  int n = ring_buffer__consume(impl_->rb.get());
  if (n < 0) return make_errno_error(n, "failed to consume ring buffer: {}", n);
  return n;
}

uint64_t Tracer::drops() const {
  std::vector<uint64_t> v(static_cast<size_t>(impl_->ncpus));
  uint32_t zero = 0;
  if (bpf_map__lookup_elem(impl_->skel->maps.drops, &zero, sizeof(zero), v.data(),
                           v.size() * sizeof(uint64_t), 0))
    return 0;
  uint64_t sum = 0;
  for (auto x : v) sum += x;
  return sum;
}

std::optional<ripple_pt_stats> Tracer::stats(uint32_t pt) const {
  ripple_pt_stats st{};
  if (pt >= opts_.pts.size() ||
      bpf_map__lookup_elem(impl_->skel->maps.pt_stats, &pt, sizeof(pt), &st, sizeof(st), 0))
    return std::nullopt;
  return st;
}

Status Tracer::set_deadline(uint32_t pt, uint64_t deadline_ns) {
  if (pt >= opts_.pts.size()) return make_error("no protected task {}", pt);
  ripple_pt_config cfg{};
  auto* map = impl_->skel->maps.pt_config;
  if (bpf_map__lookup_elem(map, &pt, sizeof(pt), &cfg, sizeof(cfg), 0))
    return make_errno_error(-errno, "failed to read pt_config: {}", -errno);
  cfg.deadline_ns = deadline_ns;
  if (bpf_map__update_elem(map, &pt, sizeof(pt), &cfg, sizeof(cfg), BPF_EXIST))
    return make_errno_error(-errno, "failed to write pt_config: {}", -errno);
  opts_.pts[pt].deadline_ns = deadline_ns;
  return Status::Ok();
}

std::vector<ProgramStats> Tracer::program_stats() const {
  std::vector<ProgramStats> out;
  bpf_program* prog;
  bpf_object__for_each_program(prog, impl_->skel->obj) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len)) continue;
    out.push_back({bpf_program__name(prog), info.run_time_ns, info.run_cnt});
  }
  return out;
}

size_t Tracer::thread_count(uint32_t pt) const {
  int fd = bpf_map__fd(impl_->skel->maps.pt_threads);
  size_t n = 0;
  __u32 key, next;
  __u32* prev = nullptr;
  ripple_thread th;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    if (bpf_map_lookup_elem(fd, &next, &th) == 0 && th.pt == pt) n++;
    key = next;
    prev = &key;
  }
  return n;
}

bool Tracer::job_open(pid_t tid, uint64_t seq) const {
  int fd = bpf_map__fd(impl_->skel->maps.pt_threads);
  __u32 key = static_cast<__u32>(tid);
  ripple_thread th;
  if (bpf_map_lookup_elem(fd, &key, &th) != 0) return false;
  return th.state == RIPPLE_TS_IN_JOB && th.seq == seq;
}

}  // namespace ripple::tracer
