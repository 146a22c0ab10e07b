// The test command's second phase runs the unit tests under AddressSanitizer
// (and UBSan): it looks for memory errors, not for volume, and every
// instruction costs it several times more. The long randomised loops run a
// share of their rounds there; the optimised build runs all of them.
#pragma once

#include <algorithm>

namespace tita::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// n rounds, or n / divisor (at least one) under the sanitizers.
constexpr int rounds(int n, int divisor) { return kSanitized ? std::max(1, n / divisor) : n; }

}  // namespace tita::test
