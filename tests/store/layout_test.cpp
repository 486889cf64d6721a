// Naming rules of docs/store-format.md#flat-layout-45fc: segment encoding, buckets, file-name length limits.
#include "store/errors.hpp"
#include "store/layout.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp::store;

BOOST_AUTO_TEST_SUITE(layout)

BOOST_AUTO_TEST_CASE(segment_examples_of_the_spec) {
  BOOST_TEST(encode_segment("a/b") == "a~002Fb");
  BOOST_TEST(encode_segment("a~b") == "a~007Eb");
  BOOST_TEST(encode_segment("plain-ID_1.2") == "plain-ID_1.2");
  BOOST_TEST(encode_segment(".") == "~002E");
  BOOST_TEST(encode_segment("..") == "~002E~002E");
  BOOST_TEST(encode_segment("...") == "...");  // only the two special names are escaped
  BOOST_TEST(encode_segment("../../etc") == "..~002F..~002Fetc");
  BOOST_TEST(encode_segment("a b") == "a~0020b");
}

BOOST_AUTO_TEST_CASE(segment_works_per_utf16_code_unit) {
  BOOST_TEST(encode_segment("\xC3\xA9") == "~00E9");                 // é: one unit
  BOOST_TEST(encode_segment("\xE6\x97\xA5") == "~65E5");             // 日
  BOOST_TEST(encode_segment("\xF0\x9F\x98\x80") == "~D83D~DE00");    // 😀: a surrogate pair
  BOOST_TEST(encode_segment("\xEF\xBF\xBD") == "~FFFD");             // U+FFFD (a lone surrogate after parsing)
  BOOST_TEST(encode_segment(std::string("a\xFF", 2)) == "a~FFFD");   // invalid UTF-8 counts as U+FFFD
}

BOOST_AUTO_TEST_CASE(empty_segment_throws) {
  BOOST_CHECK_THROW(encode_segment(""), InvalidSessionId);
  try {
    encode_segment("");
  } catch (const InvalidSessionId& e) {
    BOOST_TEST(std::string(e.what()) == "cannot encode an empty path segment");
  }
}

BOOST_AUTO_TEST_CASE(buckets_hash_the_cwd) {
  BOOST_TEST(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(bucket_name(std::string("abc")) == "cwd-ba7816bf8f01");
  BOOST_TEST(bucket_name(std::nullopt) == "_no-cwd");
}

BOOST_AUTO_TEST_CASE(suffixes_and_names) {
  BOOST_TEST(log_file_name("x", Encoding::zstd) == "x.jsonl.zstd");
  BOOST_TEST(log_file_name("x", Encoding::none) == "x.jsonl");
  BOOST_TEST(is_log_file_name("x.jsonl", Encoding::none));
  BOOST_TEST(!is_log_file_name("x.jsonl.zstd", Encoding::none));
  BOOST_TEST(is_log_file_name("x.jsonl.zstd", Encoding::zstd));
  BOOST_TEST(!is_log_file_name("x.jsonl.zstd.abcdefabcdef.tmp", Encoding::zstd));
  BOOST_TEST(lock_file_name("a/b") == "a~002Fb.lock");
  BOOST_TEST(!is_log_file_name(lock_file_name("x"), Encoding::none));
}

BOOST_AUTO_TEST_CASE(too_long_ids_are_rejected_with_a_dedicated_error) {
  // final name + ".<12hex>.tmp" must fit NAME_MAX: 255 - 17 - 11 = 227 encoded bytes for zstd.
  BOOST_CHECK_NO_THROW(log_file_name(std::string(227, 'a'), Encoding::zstd));
  BOOST_CHECK_THROW(log_file_name(std::string(228, 'a'), Encoding::zstd), IdTooLong);
  BOOST_CHECK_NO_THROW(log_file_name(std::string(232, 'a'), Encoding::none));
  BOOST_CHECK_THROW(log_file_name(std::string(233, 'a'), Encoding::none), IdTooLong);
  BOOST_CHECK_THROW(log_file_name(std::string(300, 'a'), Encoding::none), IdTooLong);
  // 50 CJK characters are 150 UTF-8 bytes but 250 encoded bytes.
  std::string cjk;
  for (int i = 0; i < 50; ++i) cjk += "\xE6\x97\xA5";
  BOOST_CHECK_THROW(log_file_name(cjk, Encoding::none), IdTooLong);
  // IdTooLong is an InvalidSessionId (the host maps both to -32602).
  BOOST_CHECK_THROW(log_file_name(std::string(300, 'a'), Encoding::none), InvalidSessionId);
}

BOOST_AUTO_TEST_CASE(cwd_normalisation) {
  BOOST_TEST(normalize_cwd("/a/b/") == "/a/b");
  BOOST_TEST(normalize_cwd("/a/./b//c/../d") == "/a/b/d");
  BOOST_TEST(normalize_cwd("/") == "/");
  BOOST_TEST(normalize_cwd("/..") == "/");
}

BOOST_AUTO_TEST_SUITE_END()
