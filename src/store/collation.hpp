// Locale-sensitive text operations of listings and candidate search, pinned to en-US and never
// the process locale (docs/store-format.md#listing-order, docs/session-references.md#candidates): id ordering as
// String.prototype.localeCompare, and toLocaleLowerCase. ICU objects are created on first use
// (ICU start-up is not free) and shared.
#pragma once

#include <string>
#include <string_view>

namespace acp::store {

/// <0, 0, >0 like localeCompare(a, b) in en-US; byte order breaks collation ties so the result
/// is a strict weak order suitable for sorting.
int compare_ids_en_us(std::string_view a, std::string_view b);

/// toLocaleLowerCase('en-US'): ICU full lowercase mapping (final sigma, İ -> i̇, Kelvin sign -> k).
/// Invalid UTF-8 is read as U+FFFD.
std::string lowercase_en_us(std::string_view text);

} // namespace acp::store
