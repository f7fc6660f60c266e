// The unit catalog of a model ("profile"): per-unit byte volumes from ripple-profile
// (safetensors headers + config.json) and, once recorded, each unit's kernel sequence
// and GPU time. The interposer loads it to announce units to the agent and to find
// unit boundaries in an unmodified process by matching the kernel sequence
// (SequenceMatcher). Pure code: no CUDA, no I/O besides load/save.
//
// JSON (format "ripple-unit-catalog/1"):
//   {"format": "...", "model": "...", "kv_bytes_per_token": N,
//    "units": [{"name": "layers.0", "kind": "decoder", "bytes": N, "total_bytes": N,
//               "kernels": ["k1", "k2", ...], "gpu_ns": N}, ...]}
#pragma once

#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "ripple/protocol.h"
#include "ripple/status.h"

namespace ripple::cuhook {

inline constexpr const char* kCatalogFormat = "ripple-unit-catalog/1";
// Unit names travel in the protocol's fixed field (NUL included).
inline constexpr std::size_t kMaxUnitName = engine::kUnitNameBytes - 1;
// The default RIPPLE_NVTX_PATTERN: numbered layers ("model.layers.3", "h.3",
// "visual.blocks.3") and the output head.
inline constexpr const char* kDefaultNvtxPattern =
    "(?:^|[^A-Za-z])(?:layers|layer|h|blocks)[._ ]?([0-9]+)|(?:^|\\.)lm_head$";

struct ProfileUnit {
  std::string name;
  std::string kind;              // embed | decoder | moe-decoder | head | graph | other
  std::uint64_t bytes = 0;       // bytes one batch-1 decode step moves through this unit
  std::uint64_t total_bytes = 0; // all weights of the unit (MoE: every expert)
  std::uint64_t gpu_ns = 0;      // recorded GPU time (0: not recorded)
  std::vector<std::string> kernels;  // recorded kernel sequence (empty: not recorded)
};

struct Profile {
  std::string model;
  std::uint64_t kv_bytes_per_token = 0;
  std::vector<ProfileUnit> units;
  int find(std::string_view name) const;  // index or -1
};

Result<Profile> parse_profile(std::string_view json_text, const std::string& origin);
Result<Profile> load_profile(const std::string& path);
std::string profile_to_json(const Profile& p);

// Finds unit boundaries in a stream of kernel launches by the recorded per-unit kernel
// sequences. The expected position advances on each match; a kernel that does not
// match resynchronises to the nearest unit whose first kernel it is (searching forward,
// then from the start: a new forward pass); a kernel matching nothing belongs to the
// unit in progress.
class SequenceMatcher {
 public:
  explicit SequenceMatcher(const Profile& p);
  struct Step {
    int begin_unit = -1;  // this launch starts that unit
    int end_unit = -1;    // this launch is the last kernel of that unit
    bool matched = false;
  };
  Step on_kernel(std::string_view name);
  bool empty() const { return seq_.empty(); }
  std::uint64_t resyncs() const { return resyncs_; }
  std::uint64_t unmatched() const { return unmatched_; }

 private:
  std::vector<std::string> seq_;
  std::vector<int> unit_of_;
  std::vector<std::size_t> first_, last_;  // per unit; first_ == npos: no kernels
  std::size_t pos_ = 0;
  std::uint64_t resyncs_ = 0, unmatched_ = 0;
};

// Maps NVTX range names to catalog units: names matching `pattern` (ECMAScript regex)
// are unit ranges. When capture group 1 (a layer number) matched, the unit is
// "<tower>.layers.<n>": <tower> is what precedes the match (separators at the match's
// start belong to it; trailing separators dropped) minus leading "model"/"transformer"
// roots, and the name is just "layers.<n>" when nothing is left:
//   model.layers.3, h.3, transformer.h.3        -> layers.3
//   visual.blocks.3, model.visual.blocks.3      -> visual.layers.3
// Without group 1 the whole range name is the unit name ("lm_head").
// Names are cut to kMaxUnitName bytes: "layers.<n>" is kept whole and the tower keeps
// its leading components ('.', '/', ':', '-', ' ' separate them) that fit, else its
// first characters:
//   vision_tower.vision_model.encoder.layers.12 -> vision_tower.layers.12
// A name without a layer number is cut to its first kMaxUnitName bytes.
std::string unit_name_for_range(const std::string& range, const std::string& pattern, bool* is_unit);

// A unit-range pattern compiled once (the interposer asks it at every new range name).
class NvtxPattern {
 public:
  // An invalid pattern is an error that says why (std::regex's reason).
  static Result<NvtxPattern> compile(const std::string& pattern);
  // As unit_name_for_range.
  std::string unit_name(const std::string& range, bool* is_unit) const;

 private:
  explicit NvtxPattern(std::regex re) : re_(std::move(re)) {}
  std::regex re_;
};

}  // namespace ripple::cuhook
