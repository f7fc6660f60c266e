// The suggested chunk size (agent/pricing/chunk.h).
#include "agent/pricing/chunk.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "agent/pricing/ledger.h"

namespace ripple::pricing {

Bytes suggest_chunk_bytes(std::span<const Bytes> allowances) {
  std::vector<Bytes> a;
  for (Bytes x : allowances)
    if (x > 0 && x != kUnlimitedBytes) a.push_back(x);
  if (a.empty()) return 0;
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a.size() / 2), a.end());
  const Bytes typical = a[a.size() / 2];
  const auto per = static_cast<std::uint64_t>(std::max<Bytes>(1, typical / static_cast<Bytes>(kChunksPerAllowance)));
  return std::clamp(static_cast<Bytes>(std::bit_floor(per)), kMinSuggestedChunk, kMaxSuggestedChunk);
}

Bytes suggest_chunk_bytes(const Ledger& ledger) {
  if (ledger.params().chunk_bytes > 0) return ledger.params().chunk_bytes;  // pricing.chunk_bytes
  std::vector<Bytes> allowances;
  for (TaskId k = 0; k < ledger.task_count(); ++k)
    if (const Estimator& e = ledger.task(k); e.has_priced() && !e.exempt()) allowances.push_back(e.base_allowance());
  return suggest_chunk_bytes(allowances);
}

}  // namespace ripple::pricing
