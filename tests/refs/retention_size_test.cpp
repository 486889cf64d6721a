// The retention size model must agree byte for byte with what retain() writes: a budget equal to the
// untruncated size keeps everything, one byte less forces a cut. Any miscount of the fixed shells
// (data object, role shells, null fields, the omission notice) moves one of these boundaries.
#include <boost/test/unit_test.hpp>

#include "refs/retention.hpp"

#include <string>
#include <vector>

using namespace acp::refs;

namespace {

std::vector<ProjectedItem> conversation() {
  // '<' is escaped by the tag-safe serializer, so it also checks that escapes are counted.
  return {{Role::user, false, "first <question>"},
          {Role::assistant, false, "an answer \xE2\x80\xA6 with UTF-8"},
          {Role::user, false, "second"},
          {Role::assistant, false, std::string_view("the newest answer, long enough to be cut in half by truncation")}};
}

void check_boundary(const SourceHeader& header) {
  const auto items = conversation();
  auto full = retain(header, items, 1 << 20);
  BOOST_REQUIRE(full);
  BOOST_TEST(!full->stats.truncated);
  const auto size = static_cast<std::int64_t>(full->data_json.size());

  auto exact = retain(header, items, size);
  BOOST_REQUIRE(exact);
  BOOST_TEST(!exact->stats.truncated);
  BOOST_TEST(exact->data_json == full->data_json);

  auto tight = retain(header, items, size - 1);
  BOOST_REQUIRE(tight);
  BOOST_TEST(tight->stats.truncated);
  BOOST_TEST(static_cast<std::int64_t>(tight->data_json.size()) <= size - 1);
}

} // namespace

BOOST_AUTO_TEST_SUITE(retention_size)

BOOST_AUTO_TEST_CASE(budget_boundary_is_exact_with_all_fields) {
  check_boundary({"s-1", "label <x>", std::string_view("/work/<dir>"), 42});
}

BOOST_AUTO_TEST_CASE(budget_boundary_is_exact_with_null_fields) {
  check_boundary({"s-2", "label", std::nullopt, std::nullopt});
}

BOOST_AUTO_TEST_CASE(truncation_notice_fits_its_target) {
  const std::string text(1000, 'x');
  for (std::int64_t target : {40, 64, 100, 999}) {
    auto cut = truncate_with_notice(text, target);
    BOOST_TEST(static_cast<std::int64_t>(cut.text.size()) <= target);
    BOOST_TEST(cut.omitted_bytes > 0);
    BOOST_TEST(cut.text.find("omitted " + std::to_string(cut.omitted_bytes) + " UTF-8 bytes") != std::string::npos);
    // The kept head and tail plus the omitted bytes are the whole text.
    const auto notice_len = std::string("\n[\xE2\x80\xA6 omitted ").size() + std::to_string(cut.omitted_bytes).size() +
                            std::string(" UTF-8 bytes \xE2\x80\xA6]").size();
    BOOST_TEST(cut.text.size() - notice_len + static_cast<std::size_t>(cut.omitted_bytes) == text.size());
  }
}

BOOST_AUTO_TEST_SUITE_END()
