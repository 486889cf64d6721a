// The tools' server-side parts on real files: confinement to the session's roots, the read window,
// edits and atomic writes, glob patterns, and the glob and grep walks.
#include "../common/temp_dir.hpp"
#include "tools/catalog.hpp"
#include "tools/command.hpp"
#include "tools/output_cap.hpp"
#include "tools/file_change.hpp"
#include "tools/glob_pattern.hpp"
#include "tools/roots.hpp"
#include "tools/search.hpp"
#include "tools/text_window.hpp"
#include "tools/tool_failure.hpp"
#include "run_coroutine.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

namespace fs = std::filesystem;
using namespace acp::tools;

namespace {

struct Scratch {
  acp::test::TempDir tmp{"dsh-tools"};
  fs::path dir{tmp.path()};
  Scratch() {
    fs::create_directories(dir / "work");
    fs::create_directories(dir / "outside");
  }
  std::string work() const { return (dir / "work").string(); }
  std::string outside() const { return (dir / "outside").string(); }
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void set_mtime(const fs::path& p, long seconds) {
  struct utimbuf t {seconds, seconds};
  ::utime(p.c_str(), &t);
}

std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ToolFailure& e) {
    return e.what();
  }
  return "(no failure)";
}

std::string window_of(std::string_view text, ReadRequest r = {}, std::size_t chunk = 0) {
  TextWindow w(r);
  if (chunk == 0) w.feed(text);
  else
    for (std::size_t i = 0; i < text.size(); i += chunk) w.feed(text.substr(i, chunk));
  return w.finish("f.txt");
}

std::string content_of(const std::string& window) {
  auto a = window.find("<content>\n") + 10;
  return window.substr(a, window.rfind("\n</content>") - a);
}

// Both resolutions: openat2 (what this kernel has) and the component walk (kernels without it).
const Resolution kResolutions[] = {Resolution::automatic, Resolution::component_walk};

} // namespace

BOOST_AUTO_TEST_SUITE(tool_roots)

BOOST_AUTO_TEST_CASE(paths_inside_resolve_and_escapes_are_refused) {
  Scratch s;
  put(fs::path(s.work()) / "src/a.cpp", "x");
  put(fs::path(s.outside()) / "secret", "s");
  for (Resolution how : kResolutions) {
    Roots roots(s.work(), {}, how);
    BOOST_TEST(roots.resolve("src/a.cpp").path == s.work() + "/src/a.cpp");
    BOOST_TEST(roots.resolve("src/a.cpp").exists);
    BOOST_TEST(roots.resolve("./src/../src/a.cpp").path == s.work() + "/src/a.cpp");
    BOOST_TEST(roots.resolve(s.work() + "/src/a.cpp").path == s.work() + "/src/a.cpp");
    auto fresh = roots.resolve("new/dir/file.txt");
    BOOST_TEST(!fresh.exists);
    BOOST_TEST(fresh.path == s.work() + "/new/dir/file.txt");
    BOOST_TEST(roots.resolve(".").path == s.work());
    BOOST_TEST(roots.resolve(".").directory);
    BOOST_TEST(roots.resolve("src/").directory);
    BOOST_TEST(roots.resolve("not-yet/").directory);
    for (std::string bad : {std::string("../outside/secret"), s.outside() + "/secret", std::string("/etc/passwd"),
                            std::string("new/../../outside/x"), std::string("src/../../work2"), std::string("src/../../outside/secret")})
      BOOST_TEST(failure_of([&] { roots.resolve(bad); }).find("outside the session's directories") != std::string::npos,
                 bad);
    BOOST_TEST(failure_of([&] { roots.open("src/../../outside/secret", O_RDONLY); }).find("outside") != std::string::npos);
    BOOST_TEST(failure_of([&] { roots.resolve(""); }) == "the path is empty");
    BOOST_TEST(failure_of([&] { roots.resolve(std::string("a\0b", 3)); }).find("NUL") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(the_kernel_resolves_unless_the_walk_is_forced) {
  Scratch s;
  BOOST_TEST(Roots(s.work()).kernel_resolution());  // Linux >= 5.6: openat2
  BOOST_TEST(!Roots(s.work(), {}, Resolution::component_walk).kernel_resolution());
}

BOOST_AUTO_TEST_CASE(symbolic_links_inside_work_and_links_out_are_refused) {
  Scratch s;
  put(fs::path(s.outside()) / "secret", "s");
  put(fs::path(s.work()) / "real.txt", "r");
  fs::create_symlink(s.outside() + "/secret", s.work() + "/leak");
  fs::create_directory_symlink(s.outside(), s.work() + "/out");
  fs::create_directory_symlink("../outside", s.work() + "/out-relative");
  fs::create_symlink(s.work() + "/real.txt", s.work() + "/alias");  // absolute, but inside
  fs::create_symlink("real.txt", s.work() + "/relative-alias");
  fs::create_symlink(s.outside() + "/missing", s.work() + "/dangling");
  fs::create_symlink("missing-here", s.work() + "/dangling-inside");
  fs::create_symlink("loop", s.work() + "/loop");
  fs::create_directories(s.work() + "/deep/er");
  fs::create_directory_symlink(s.work() + "/deep/er", s.work() + "/er-link");
  for (Resolution how : kResolutions) {
    Roots roots(s.work(), {}, how);
    for (std::string bad : {"leak", "out/secret", "out/new-file", "out-relative/secret", "dangling"}) {
      BOOST_TEST(failure_of([&] { roots.resolve(bad); }).find("outside") != std::string::npos, bad);
      BOOST_TEST(failure_of([&] { roots.open(bad, O_RDONLY); }).find("outside") != std::string::npos, bad);
    }
    BOOST_TEST(failure_of([&] { roots.resolve("dangling-inside"); }).find("symbolic link to a missing file") != std::string::npos);
    BOOST_TEST(failure_of([&] { roots.open("loop", O_RDONLY); }).find("symbolic links") != std::string::npos);
    BOOST_TEST(roots.resolve("alias").path == s.work() + "/real.txt");
    BOOST_TEST(roots.open("alias", O_RDONLY).path == s.work() + "/real.txt");
    BOOST_TEST(roots.open("relative-alias", O_RDONLY).path == s.work() + "/real.txt");
    // `..` after a link applies to the link's real parent, as the kernel does.
    BOOST_TEST(roots.resolve("er-link/..").path == s.work() + "/deep");
    BOOST_TEST(roots.open("er-link/..", O_RDONLY | O_DIRECTORY).path == s.work() + "/deep");
  }
}

BOOST_AUTO_TEST_CASE(links_and_dots_may_cross_into_another_root) {
  Scratch s;
  put(fs::path(s.outside()) / "lib.h", "l");
  fs::create_directories(s.work() + "/src");
  fs::create_symlink(s.outside() + "/lib.h", s.work() + "/lib-link.h");
  for (Resolution how : kResolutions) {
    Roots roots(s.work(), {s.outside()}, how);
    BOOST_TEST(roots.open("../outside/lib.h", O_RDONLY).path == s.outside() + "/lib.h");
    BOOST_TEST(roots.open("src/../../outside/lib.h", O_RDONLY).path == s.outside() + "/lib.h");
    BOOST_TEST(roots.open("lib-link.h", O_RDONLY).path == s.outside() + "/lib.h");
    BOOST_TEST(failure_of([&] { roots.open("../../etc/passwd", O_RDONLY); }).find("outside") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(additional_directories_are_roots_too) {
  Scratch s;
  put(fs::path(s.outside()) / "lib.h", "l");
  Roots roots(s.work(), {s.outside()});
  BOOST_TEST(roots.resolve(s.outside() + "/lib.h").exists);
  BOOST_TEST(roots.display(s.outside() + "/lib.h") == "lib.h");
  BOOST_TEST(roots.display(s.work() + "/a/b") == "a/b");
  BOOST_CHECK_THROW(Roots(s.work(), {"relative/dir"}), std::invalid_argument);
  BOOST_CHECK_THROW(Roots(s.work(), {s.work() + "/missing"}), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tool_read_window)

BOOST_AUTO_TEST_CASE(lines_are_numbered_with_the_harness_footers) {
  BOOST_TEST(window_of("a\nb\nc\n") == "<path>f.txt</path>\n<type>file</type>\n<content>\n1: a\n2: b\n3: c\n\n"
                                        "(End of file - total 3 lines)\n</content>");
  BOOST_TEST(content_of(window_of("a\nb\nc", {2, 1})) == "2: b\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)");
  BOOST_TEST(content_of(window_of("")) == "(End of file - total 0 lines)");
  BOOST_TEST(content_of(window_of("x\r\ny\r\n")) == "1: x\n2: y\n\n(End of file - total 2 lines)");
  BOOST_TEST(failure_of([] { window_of("a\nb\n", {5}); }) == "offset 5 is out of range for \"f.txt\" (2 lines)");
}

BOOST_AUTO_TEST_CASE(caps_cut_lines_and_windows_and_say_so) {
  ReadRequest r;
  r.max_line_chars = 3;
  BOOST_TEST(content_of(window_of("abcdef\n", r)) == "1: abc... (line truncated to 3 chars)\n\n(End of file - total 1 lines)");
  ReadRequest b;
  b.max_bytes = 5;
  BOOST_TEST(content_of(window_of("aa\nbb\ncc\n", b)) == "1: aa\n2: bb\n\n(Output capped. Showing lines 1-2. Use offset=3 to continue.)");
}

BOOST_AUTO_TEST_CASE(characters_survive_any_chunking_and_bad_bytes_show_as_replacements) {
  const std::string text = "\xF0\x9F\x98\x80 smile\n\xC3\xA9t\xC3\xA9\n";
  const std::string whole = window_of(text);
  for (std::size_t chunk = 1; chunk < 6; ++chunk) BOOST_TEST(window_of(text, {}, chunk) == whole);
  BOOST_TEST(content_of(window_of("a\xFF" "b\n")).substr(0, 9) == "1: a\xEF\xBF\xBD" "b\n");
  ReadRequest r;
  r.max_line_chars = 2;
  BOOST_TEST(content_of(window_of("\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80\n", r)).substr(0, 14) ==
             "1: \xF0\x9F\x98\x80\xF0\x9F\x98\x80...");
  BOOST_TEST(failure_of([] { window_of(std::string("PK\0\x03", 4)); }) == "this is a binary file, not text");
}

BOOST_AUTO_TEST_CASE(reading_a_file_checks_its_kind) {
  Scratch s;
  put(fs::path(s.work()) / "f.txt", "one\ntwo\n");
  BOOST_TEST(::mkfifo((s.work() + "/pipe").c_str(), 0600) == 0);
  for (Resolution how : kResolutions) {
    Roots roots(s.work(), {}, how);
    BOOST_TEST(content_of(read_file_window(roots, "f.txt", {})) == "1: one\n2: two\n\n(End of file - total 2 lines)");
    BOOST_TEST(read_file_window(roots, "f.txt", {}).find("<path>" + s.work() + "/f.txt</path>") == 0u);
    BOOST_TEST(failure_of([&] { read_file_window(roots, ".", {}); }).find("is a directory") != std::string::npos);
    BOOST_TEST(failure_of([&] { read_file_window(roots, "nope", {}); }) == "\"nope\" does not exist");
    // A FIFO is refused at once, not waited on for a writer.
    BOOST_TEST(failure_of([&] { read_file_window(roots, "pipe", {}); }).find("not a regular file") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tool_file_changes)

BOOST_AUTO_TEST_CASE(an_edit_replaces_one_unique_literal) {
  std::size_t n = 0;
  BOOST_TEST(apply_edit("a.b a+b", {"a+b", "c", false}, "f", &n) == "a.b c");
  BOOST_TEST(n == 1u);
  BOOST_TEST(apply_edit("xx-xx", {"xx", "y", true}, "f", &n) == "y-y");
  BOOST_TEST(n == 2u);
  BOOST_TEST(failure_of([] { apply_edit("xx-xx", {"xx", "y", false}, "f"); }).find("appears 2 times") != std::string::npos);
  BOOST_TEST(failure_of([] { apply_edit("abc", {"z", "y", false}, "f"); }).find("was not found") != std::string::npos);
  BOOST_TEST(failure_of([] { apply_edit("abc", {"", "y", false}, "f"); }).find("old_string is empty") != std::string::npos);
  // Overlapping candidates count as the matches a left-to-right replacement makes.
  BOOST_TEST(apply_edit("aaa", {"aa", "b", true}, "f") == "ba");
}

BOOST_AUTO_TEST_CASE(writes_create_directories_keep_modes_and_stay_inside) {
  Scratch s;
  Roots roots(s.work());
  auto created = write_local(roots, "deep/new/file.txt", "hello\n");
  BOOST_TEST(!created.before.has_value());
  BOOST_TEST(slurp(s.work() + "/deep/new/file.txt") == "hello\n");
  put(fs::path(s.work()) / "run.sh", "old");
  ::chmod((s.work() + "/run.sh").c_str(), 0751);
  auto replaced = write_local(roots, "run.sh", "new");
  BOOST_TEST(replaced.before.value_or("") == "old");
  BOOST_TEST(slurp(s.work() + "/run.sh") == "new");
  struct stat st {};
  ::stat((s.work() + "/run.sh").c_str(), &st);
  BOOST_TEST((st.st_mode & 07777) == 0751u);
  fs::create_directory_symlink(s.outside(), s.work() + "/out");
  BOOST_TEST(failure_of([&] { write_local(roots, "out/x.txt", "x"); }).find("outside") != std::string::npos);
  BOOST_TEST(!fs::exists(s.outside() + "/x.txt"));
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(s.work())) BOOST_TEST(e.path().filename().string().find(".tmp") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(writes_and_edits_refuse_directories_and_work_through_links_inside) {
  Scratch s;
  fs::create_directories(s.work() + "/src");
  put(fs::path(s.work()) / "real.txt", "one");
  fs::create_symlink(s.work() + "/real.txt", s.work() + "/alias");
  fs::create_directory_symlink("src", s.work() + "/src-link");
  for (Resolution how : kResolutions) {
    Roots roots(s.work(), {}, how);
    for (std::string dir : {".", "src", "src/", "src-link", "new-dir/"}) {
      BOOST_TEST(failure_of([&] { write_local(roots, dir, "x"); }).find("is a directory") != std::string::npos, dir);
      BOOST_TEST(failure_of([&] { edit_local(roots, dir, {"a", "b", false}); }).find("is a directory") != std::string::npos, dir);
    }
    BOOST_TEST(!fs::exists(s.work() + "/new-dir"));
    // A link inside the roots is written through: its target gets the text, the link stays.
    write_local(roots, "alias", "two");
    BOOST_TEST(fs::is_symlink(s.work() + "/alias"));
    BOOST_TEST(slurp(s.work() + "/real.txt") == "two");
    auto created = write_local(roots, "src-link/made/here.txt", "h");
    BOOST_TEST(created.path == s.work() + "/src/made/here.txt");
    BOOST_TEST(slurp(s.work() + "/src/made/here.txt") == "h");
    fs::remove_all(s.work() + "/src/made");
    put(fs::path(s.work()) / "real.txt", "one");
  }
}

BOOST_AUTO_TEST_CASE(a_hard_link_to_an_outside_file_is_read_but_never_written_through) {
  // The rule: a hard link inside a root is a name inside the root, so read shows the file's text;
  // write and edit replace the directory entry (a new file renamed over it), so the file's other
  // names, outside included, keep their text.
  Scratch s;
  put(fs::path(s.outside()) / "shared.txt", "outside text\n");
  for (Resolution how : kResolutions) {
    fs::remove(s.work() + "/linked.txt");
    put(fs::path(s.outside()) / "shared.txt", "outside text\n");
    fs::create_hard_link(s.outside() + "/shared.txt", s.work() + "/linked.txt");
    Roots roots(s.work(), {}, how);
    BOOST_TEST(content_of(read_file_window(roots, "linked.txt", {})) == "1: outside text\n\n(End of file - total 1 lines)");
    auto edited = edit_local(roots, "linked.txt", {"outside", "inside", false});
    BOOST_TEST(edited.before.value_or("") == "outside text\n");
    BOOST_TEST(slurp(s.work() + "/linked.txt") == "inside text\n");
    BOOST_TEST(slurp(s.outside() + "/shared.txt") == "outside text\n");
    BOOST_TEST(fs::hard_link_count(s.outside() + "/shared.txt") == 1u);
    fs::remove(s.work() + "/linked.txt");
    fs::create_hard_link(s.outside() + "/shared.txt", s.work() + "/linked.txt");
    write_local(roots, "linked.txt", "replaced\n");
    BOOST_TEST(slurp(s.work() + "/linked.txt") == "replaced\n");
    BOOST_TEST(slurp(s.outside() + "/shared.txt") == "outside text\n");
  }
}

BOOST_AUTO_TEST_CASE(a_failed_edit_leaves_the_file_as_it_was) {
  Scratch s;
  Roots roots(s.work());
  put(fs::path(s.work()) / "a.txt", "one two one");
  BOOST_TEST(failure_of([&] { edit_local(roots, "a.txt", {"one", "1", false}); }).find("appears 2 times") != std::string::npos);
  BOOST_TEST(slurp(s.work() + "/a.txt") == "one two one");
  auto change = edit_local(roots, "a.txt", {"two", "2", false});
  BOOST_TEST(change.before.value_or("") == "one two one");
  BOOST_TEST(change.after == "one 2 one");
  BOOST_TEST(slurp(s.work() + "/a.txt") == "one 2 one");
  BOOST_TEST(failure_of([&] { edit_local(roots, "missing.txt", {"a", "b", false}); }).find("does not exist") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tool_search)

BOOST_AUTO_TEST_CASE(glob_patterns) {
  BOOST_TEST(GlobPattern("*.cpp").matches("src/deep/a.cpp"));
  BOOST_TEST(!GlobPattern("*.cpp").matches("src/a.hpp"));
  BOOST_TEST(GlobPattern("src/*.cpp").matches("src/a.cpp"));
  BOOST_TEST(!GlobPattern("src/*.cpp").matches("src/deep/a.cpp"));
  BOOST_TEST(GlobPattern("src/**/*.cpp").matches("src/a.cpp"));
  BOOST_TEST(GlobPattern("src/**/*.cpp").matches("src/x/y/a.cpp"));
  BOOST_TEST(GlobPattern("**/test_*.{py,cpp}").matches("a/b/test_x.py"));
  BOOST_TEST(!GlobPattern("**/test_*.{py,cpp}").matches("a/b/test_x.js"));
  BOOST_TEST(GlobPattern("file[0-9].txt").matches("file7.txt"));
  BOOST_TEST(!GlobPattern("file[!0-9].txt").matches("file7.txt"));
  BOOST_TEST(GlobPattern("a\\*b").matches("a*b"));
  BOOST_TEST(!GlobPattern("a\\*b").matches("axb"));
  BOOST_TEST(GlobPattern("?.md").matches("x.md"));
  BOOST_CHECK_THROW(GlobPattern("[abc"), ToolFailure);
  BOOST_CHECK_THROW(GlobPattern("{a,b"), ToolFailure);
  // Many stars and double stars stay fast (no exponential backtracking).
  BOOST_TEST(!GlobPattern("**/**/**/**/**/**/**/**/*a*a*a*a*a*a*a*a*b").matches(std::string(40, 'x') + "/" + std::string(200, 'a')));
}

BOOST_AUTO_TEST_CASE(glob_lists_newest_first_honours_gitignore_and_caps) {
  Scratch s;
  fs::path w = s.work();
  put(w / ".gitignore", "build/\n*.log\n!keep.log\n");
  put(w / "src/a.cpp", "");
  put(w / "src/b.cpp", "");
  put(w / "src/.gitignore", "gen_*.cpp\n");
  put(w / "src/gen_x.cpp", "");
  put(w / "build/c.cpp", "");
  put(w / "x.log", "");
  put(w / "keep.log", "");
  put(w / ".git/objects/d.cpp", "");
  fs::create_symlink(s.outside(), w / "out");
  put(fs::path(s.outside()) / "e.cpp", "");
  set_mtime(w / "src/a.cpp", 1000);
  set_mtime(w / "src/b.cpp", 2000);
  Roots roots(s.work());
  BOOST_TEST(glob_files(roots, "*.cpp", std::nullopt) == "src/b.cpp\nsrc/a.cpp");
  BOOST_TEST(glob_files(roots, "*.log", std::nullopt) == "keep.log");
  BOOST_TEST(glob_files(roots, "*.cpp", std::string_view("src")) == "src/b.cpp\nsrc/a.cpp");
  BOOST_TEST(glob_files(roots, "*.rs", std::nullopt) == "No files found.");
  // Searching inside an ignored directory, asked for by name, shows what is there.
  BOOST_TEST(glob_files(roots, "*.cpp", std::string_view("build")) == "build/c.cpp");
  SearchLimits one;
  one.max_files_listed = 1;
  BOOST_TEST(glob_files(roots, "*.cpp", std::nullopt, {}, one) ==
             "src/b.cpp\n\n(Showing the 1 most recently modified of 2 files; narrow the pattern or the path to see the others.)");
  BOOST_TEST(failure_of([&] { glob_files(roots, "*", std::string_view("../outside")); }).find("outside") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(grep_groups_matches_filters_and_caps) {
  Scratch s;
  fs::path w = s.work();
  put(w / ".gitignore", "vendor/\n");
  put(w / "src/a.cpp", "int main() {\n  return 0;\n}\n");
  put(w / "src/b.py", "def main():\n    pass\n");
  put(w / "vendor/c.cpp", "int main() {}\n");
  put(w / "bin.dat", std::string("main\0main", 9));
  Roots roots(s.work());
  BOOST_TEST(grep_files(roots, "main", std::nullopt, std::string_view("*.cpp")) == "src/a.cpp\n  1: int main() {");
  std::string both = grep_files(roots, "ma[i]n\\(", std::nullopt, std::nullopt);
  BOOST_TEST(both.find("src/a.cpp\n  1: int main() {") != std::string::npos);
  BOOST_TEST(both.find("src/b.py\n  1: def main():") != std::string::npos);
  BOOST_TEST(both.find("vendor") == std::string::npos);
  BOOST_TEST(both.find("bin.dat") == std::string::npos);
  BOOST_TEST(grep_files(roots, "return", std::string_view("src/a.cpp"), std::nullopt) == "src/a.cpp\n  2:   return 0;");
  BOOST_TEST(grep_files(roots, "absent", std::nullopt, std::nullopt) == "No matches.");
  BOOST_TEST(failure_of([&] { grep_files(roots, "(unclosed", std::nullopt, std::nullopt); }).find("invalid regular expression") ==
             0u);
  SearchLimits one;
  one.max_matches = 1;
  BOOST_TEST(grep_files(roots, "main", std::nullopt, std::string_view("*.cpp"), {}, one) == "src/a.cpp\n  1: int main() {");
  BOOST_TEST(grep_files(roots, ".", std::string_view("src/a.cpp"), std::nullopt, {}, one).find("(Showing the first 1 matches") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_catalog_names_the_harness_tools) {
  std::vector<std::string> names;
  for (const auto& t : builtin_tools()) names.push_back(t.name);
  BOOST_TEST(names == (std::vector<std::string>{"read", "write", "edit", "bash", "glob", "grep", "todo_write"}),
             boost::test_tools::per_element());
  BOOST_TEST(find_builtin("edit")->changes_files);
  BOOST_TEST(find_builtin("bash")->runs_commands);
  BOOST_TEST(find_builtin("nope") == nullptr);
  auto req = request_tools({find_builtin("read")});
  BOOST_TEST(req.at(0).at("function").at("parameters").at("required").as_array().at(0).as_string() == "file_path");
}

// Users write [[echo:tool=NAME {JSON}]] (docs/models.md) and read the model's calls: docs/tools.md states
// every tool's parameters as `name {param, optional?, …}` in the catalog's order, so the two cannot drift apart.
namespace {
std::string repository_text(const std::string& path) {
  std::ifstream in(std::string(DSH_SCHEMA_DIR) + "/../" + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
} // namespace

BOOST_AUTO_TEST_CASE(the_docs_state_every_tools_parameters) {
  const std::string models = repository_text("docs/models.md");
  BOOST_TEST(models.find("[[echo:tool=NAME {JSON arguments}]]") != std::string::npos);
  const std::string readme = repository_text("docs/tools.md");
  BOOST_REQUIRE(!readme.empty());
  for (const auto& t : builtin_tools()) {
    const auto& props = t.parameters.at("properties").as_object();
    const auto& required = t.parameters.at("required").as_array();
    std::string signature = "`" + t.name + " {";
    bool first = true;
    for (const auto& p : props) {
      signature += (first ? "" : ", ") + std::string(p.key());
      first = false;
      if (std::find(required.begin(), required.end(), boost::json::value(p.key())) == required.end()) signature += "?";
    }
    signature += "}`";
    BOOST_TEST_CONTEXT(signature) { BOOST_TEST(readme.find(signature) != std::string::npos); }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tool_commands)

namespace {

CommandOutcome run(CommandRequest r, std::optional<std::chrono::milliseconds> cancel_after = std::nullopt) {
  boost::asio::io_context io;
  if (r.workdir.empty()) r.workdir = "/";
  return run_coroutine(io, run_command(std::move(r)), cancel_after);
}

// Killed: no /proc entry, a zombie, exiting (PF_EXITING), or a SIGKILL pending that it cannot
// survive. (The kernel closes a killed process's files, which ends our pipe, a moment before it
// shows as a zombie.)
bool killed(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  if (close == std::string::npos) return true;
  std::istringstream fields(line.substr(close + 2));
  std::string state;
  unsigned long ignored = 0, flags = 0;
  fields >> state;
  for (int i = 0; i < 5; ++i) fields >> ignored;  // ppid pgrp session tty_nr tpgid
  fields >> flags;
  if (state == "Z" || state == "X" || (flags & 0x4)) return true;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string l; std::getline(status, l);) {
    if (l.rfind("ShdPnd:", 0) == 0 || l.rfind("SigPnd:", 0) == 0) {
      if (std::stoull(l.substr(7), nullptr, 16) & (1ull << (SIGKILL - 1))) return true;
    }
  }
  return false;
}

} // namespace

BOOST_AUTO_TEST_CASE(output_exit_code_directory_and_stdin) {
  auto r = run({"echo out; echo err >&2; exit 3"});
  BOOST_TEST(r.output == "out\nerr\n");
  BOOST_TEST(r.exit_code.value_or(-1) == 3);
  BOOST_TEST(describe_outcome(r, kDefaultCommandTimeout) == "out\nerr\n[exit code: 3]");
  Scratch s;
  BOOST_TEST(run({"pwd", s.work()}).output == s.work() + "\n");
  // stdin is /dev/null: cat ends at once.
  auto cat = run({"cat; echo done"});
  BOOST_TEST(cat.output == "done\n");
  BOOST_TEST(describe_outcome(run({"true"}), kDefaultCommandTimeout) == "(no output)");
}

BOOST_AUTO_TEST_CASE(huge_output_keeps_its_head_and_tail) {
  CommandRequest req{"printf 'HEAD'; head -c 1000000 /dev/zero | tr '\\0' a; printf 'TAIL'"};
  req.max_output_bytes = 1000;
  auto r = run(req);
  BOOST_TEST(r.output_bytes == 1000008u);
  BOOST_TEST(r.output.substr(0, 4) == "HEAD");
  BOOST_TEST(r.output.substr(r.output.size() - 4) == "TAIL");
  BOOST_TEST(r.output.find("[... 999008 bytes omitted ...]") != std::string::npos);
}

// The two below need the sleep's pid printed before the timeout (the cancel); on a loaded machine
// that can take a while, so a run whose end came first is tried again with four times as long (what
// it started was killed with its group all the same).
BOOST_AUTO_TEST_CASE(a_timeout_kills_the_whole_group) {
  CommandRequest req{"sleep 3600 & echo $!; wait"};
  for (req.timeout = std::chrono::milliseconds(300);; req.timeout *= 4) {
    auto r = run(req);
    BOOST_TEST(r.timed_out);
    BOOST_TEST(killed(r.pid));
    const std::string note = "[timed out after " + std::to_string(req.timeout.count()) + " ms: the command was killed]";
    BOOST_TEST(describe_outcome(r, req.timeout).find(note) != std::string::npos);
    if (r.output.empty()) {
      BOOST_TEST_MESSAGE("the timeout came before the pid was printed; again with " << (req.timeout * 4).count() << " ms");
      continue;
    }
    BOOST_TEST(killed(std::stol(r.output)));
    break;
  }
}

BOOST_AUTO_TEST_CASE(cancelling_the_call_kills_the_group) {
  for (std::chrono::milliseconds after(300);; after *= 4) {
    auto r = run({"sleep 3600 & echo $!; wait"}, after);
    BOOST_TEST(r.cancelled);
    BOOST_TEST(!r.timed_out);
    BOOST_TEST(killed(r.pid));
    BOOST_TEST(describe_outcome(r, kDefaultCommandTimeout).find("[cancelled") != std::string::npos);
    if (r.output.empty()) {
      BOOST_TEST_MESSAGE("the cancel came before the pid was printed; again after " << (after * 4).count() << " ms");
      continue;
    }
    BOOST_TEST(killed(std::stol(r.output)));
    break;
  }
}

BOOST_AUTO_TEST_CASE(nothing_started_outlives_the_shell) {
  // The shell exits at once; the sleep it left holds the pipe until the group is killed.
  auto r = run({"sleep 30 & echo $!"});
  BOOST_TEST(r.exit_code.value_or(-1) == 0);
  BOOST_TEST(killed(std::stol(r.output)));
}

BOOST_AUTO_TEST_CASE(hidden_variables_are_not_passed_on) {
  ::setenv("DSH_TOOLS_TEST_SECRET", "s3cret", 1);
  CommandRequest req{"echo ${DSH_TOOLS_TEST_SECRET:-none}"};
  BOOST_TEST(run(req).output == "s3cret\n");
  req.hidden_env = {"DSH_TOOLS_TEST_SECRET"};
  BOOST_TEST(run(req).output == "none\n");
  ::unsetenv("DSH_TOOLS_TEST_SECRET");
}

BOOST_AUTO_TEST_CASE(the_output_cap_cuts_at_character_boundaries) {
  OutputCap whole(10);
  whole.append("abc");
  whole.append("def");
  BOOST_TEST(whole.text() == "abcdef");
  OutputCap cap(8);
  // 4-byte characters: the head's last and the tail's first are partial at any 4-byte budget split.
  for (int i = 0; i < 10; ++i) cap.append("\xF0\x9F\x98\x80");
  BOOST_TEST(cap.total_bytes() == 40u);
  BOOST_TEST(cap.text() == "\xF0\x9F\x98\x80\n[... 32 bytes omitted ...]\n\xF0\x9F\x98\x80");
  OutputCap odd(6);
  odd.append("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9");  // four 2-byte characters, 8 bytes
  BOOST_TEST(odd.text() == "\xC3\xA9\n[... 4 bytes omitted ...]\n\xC3\xA9");
}

BOOST_AUTO_TEST_SUITE_END()
