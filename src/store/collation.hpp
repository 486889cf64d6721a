// Id ordering for listings (harness-compat §2.3, contracts §4): String.prototype.localeCompare
// under en-US, i.e. ICU collation pinned to Locale("en","US"), never the process locale. The
// collator is created on first use (ICU start-up is not free) and shared.
#pragma once

#include <string_view>

namespace acp::store {

/// <0, 0, >0 like localeCompare(a, b) in en-US; byte order breaks collation ties so the result
/// is a strict weak order suitable for sorting.
int compare_ids_en_us(std::string_view a, std::string_view b);

} // namespace acp::store
