#include "store/collation.hpp"

#include "store/errors.hpp"

#include <unicode/coll.h>
#include <unicode/locid.h>
#include <unicode/stringpiece.h>
#include <unicode/unistr.h>

#include <memory>
#include <mutex>

namespace acp::store {
namespace {

const icu::Collator& collator() {
  static std::unique_ptr<icu::Collator> instance = [] {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::Collator> c(icu::Collator::createInstance(icu::Locale("en", "US"), status));
    if (U_FAILURE(status) || !c) throw StoreError("cannot create the en-US ICU collator");
    return c;
  }();
  return *instance;
}

} // namespace

int compare_ids_en_us(std::string_view a, std::string_view b) {
  if (a == b) return 0;
  UErrorCode status = U_ZERO_ERROR;
  // Collator::compare on a const instance is thread-safe in ICU (>= 4.x): no lock needed.
  UCollationResult r = collator().compareUTF8(icu::StringPiece(a.data(), int32_t(a.size())),
                                              icu::StringPiece(b.data(), int32_t(b.size())), status);
  if (U_SUCCESS(status) && r != UCOL_EQUAL) return r == UCOL_LESS ? -1 : 1;
  return a < b ? -1 : 1;
}

std::string lowercase_en_us(std::string_view text) {
  static const icu::Locale en_us("en", "US");
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), int32_t(text.size())));
  u.toLower(en_us);
  std::string out;
  u.toUTF8String(out);
  return out;
}

} // namespace acp::store
