// Emulated interference plant — a TEST DOUBLE, not a model of any real device.
//
// On machines without real CPU/GPU memory contention (CI, GPU-less demos; DESIGN.md §5)
// closed-loop tests run against a plant instead:
//   - a stand-in engine (tests/plant, `ripple-plant-engine`) "executes" units of
//     inference work, each for unit_bytes / rate seconds, and publishes in shared memory
//     the running total of bytes it has executed (updated continuously while a unit
//     runs, not only at unit ends);
//   - plant-mode periodic tasks (`--plant NAME` on every robot task) stretch each job by
//     kappa x (bytes the engine executed during the job), spinning for the difference,
//     plus optional heavy-tailed noise.
// So the ground truth the estimator must learn (kappa) is known exactly.
//
// Shared-memory layout (POSIX shm object "/<name>", i.e. /dev/shm/<name>), version 1.
// Written by one engine process; read by any number of tasks and by the agent's tests.
// Every field after the header is a lock-free 64-bit atomic, read with acquire loads;
// there is no lock. Fixed-width fields, explicit padding, 64-byte lines.
//
//   offset  field               writer   meaning
//   0       magic               engine   kPlantMagic ('RPLANT01'), written last at creation
//   8       version             engine   kPlantVersion
//   12      size                engine   sizeof(PlantShm)
//   16      engine_pid          engine   pid of the engine process
//   20      flags               engine   kPlantGated if the engine waits for grants
//   24      rate_bytes_per_s    engine   execution rate of the stand-in engine
//   32      unit_bytes          engine   bytes of one unit (a "layer")
//   40      label[88]           engine   NUL-terminated text; always names it a test double
//   128     bytes_executed      engine   total bytes executed so far (monotone)
//   136     units_started       engine   units begun
//   144     units_completed     engine   units finished
//   152     running             engine   1 while a unit executes, else 0
//   160     heartbeat_ns        engine   CLOCK_MONOTONIC ns of the last update
//   168     stopped             engine   1 once the engine has exited cleanly
//   192     units_granted       others   gated engines start unit k only once
//                                        units_granted > k (k counts from 0); a test
//                                        or the agent raises it with fetch_add
//   200     stop_request        others   nonzero asks the engine to exit
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace ripple {

inline constexpr uint64_t kPlantMagic = 0x3130544e414c5052ULL;  // "RPLANT01" in memory order
inline constexpr uint32_t kPlantVersion = 1;
inline constexpr uint32_t kPlantGated = 1u << 0;
inline constexpr const char* kPlantLabel =
    "ripple emulated interference plant (TEST DOUBLE, not a real GPU)";

struct PlantShm {
  // Header: written once by the engine before magic is published.
  std::atomic<uint64_t> magic;
  uint32_t version;
  uint32_t size;
  uint32_t engine_pid;
  uint32_t flags;
  uint64_t rate_bytes_per_s;
  uint64_t unit_bytes;
  char label[88];
  // Live engine state.
  std::atomic<uint64_t> bytes_executed;
  std::atomic<uint64_t> units_started;
  std::atomic<uint64_t> units_completed;
  std::atomic<uint64_t> running;
  std::atomic<int64_t> heartbeat_ns;
  std::atomic<uint64_t> stopped;
  uint64_t pad0_[2];
  // Written by others.
  std::atomic<uint64_t> units_granted;
  std::atomic<uint64_t> stop_request;
  uint64_t pad1_[6];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "plant needs lock-free 64-bit atomics");
static_assert(sizeof(PlantShm) == 256, "PlantShm layout changed: bump kPlantVersion");
static_assert(offsetof(PlantShm, label) == 40);
static_assert(offsetof(PlantShm, bytes_executed) == 128);
static_assert(offsetof(PlantShm, stopped) == 168);
static_assert(offsetof(PlantShm, units_granted) == 192);
static_assert(offsetof(PlantShm, stop_request) == 200);

// A mapping of the plant's shm object. Owns the mapping; not copyable.
class PlantMap {
 public:
  PlantMap() = default;
  PlantMap(const PlantMap&) = delete;
  PlantMap& operator=(const PlantMap&) = delete;
  PlantMap(PlantMap&& o) noexcept : shm_(o.shm_), name_(std::move(o.name_)) { o.shm_ = nullptr; }
  PlantMap& operator=(PlantMap&& o) noexcept {
    if (this != &o) {
      if (shm_ != nullptr) munmap(shm_, sizeof(PlantShm));
      shm_ = o.shm_;
      name_ = std::move(o.name_);
      o.shm_ = nullptr;
    }
    return *this;
  }
  ~PlantMap() {
    if (shm_ != nullptr) munmap(shm_, sizeof(PlantShm));
  }

  // Creates (or truncates) the object. Returns an empty map and sets *err on failure.
  static PlantMap create(const std::string& name, std::string* err) {
    PlantMap m;
    std::string path = shm_path(name);
    int fd = shm_open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      *err = "cannot create plant shm " + path + ": " + std::strerror(errno);
      return m;
    }
    if (ftruncate(fd, sizeof(PlantShm)) != 0) {
      *err = "cannot size plant shm " + path + ": " + std::strerror(errno);
      close(fd);
      return m;
    }
    void* p = map_and_close(fd, path, err);
    if (p == nullptr) return m;
    std::memset(p, 0, sizeof(PlantShm));
    m.shm_ = static_cast<PlantShm*>(p);
    m.name_ = path;
    return m;
  }

  // Maps the object open on fd (closed here either way); nullptr and *err on failure.
  static void* map_and_close(int fd, const std::string& path, std::string* err) {
    void* p = mmap(nullptr, sizeof(PlantShm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) return p;
    *err = "cannot map plant shm " + path + ": " + std::strerror(errno);
    return nullptr;
  }

  // Opens an existing object and checks magic, version and size.
  static PlantMap open(const std::string& name, std::string* err) {
    PlantMap m;
    std::string path = shm_path(name);
    int fd = shm_open(path.c_str(), O_RDWR, 0);
    if (fd < 0) {
      *err = "cannot open plant shm " + path + ": " + std::strerror(errno) +
             " (is ripple-plant-engine running?)";
      return m;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(PlantShm))) {
      *err = "plant shm " + path + " is too small to be a plant";
      close(fd);
      return m;
    }
    void* p = map_and_close(fd, path, err);
    if (p == nullptr) return m;
    auto* shm = static_cast<PlantShm*>(p);
    if (shm->magic.load(std::memory_order_acquire) != kPlantMagic ||
        shm->version != kPlantVersion || shm->size != sizeof(PlantShm)) {
      *err = "plant shm " + path + " has a bad magic/version/size (not a v1 plant)";
      munmap(p, sizeof(PlantShm));
      return m;
    }
    m.shm_ = shm;
    m.name_ = path;
    return m;
  }

  static std::string shm_path(const std::string& name) {
    return name.empty() || name[0] == '/' ? name : "/" + name;
  }

  explicit operator bool() const { return shm_ != nullptr; }
  PlantShm* operator->() const { return shm_; }
  PlantShm* get() const { return shm_; }
  const std::string& name() const { return name_; }

 private:
  PlantShm* shm_ = nullptr;
  std::string name_;
};

}  // namespace ripple
