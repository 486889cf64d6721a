// `dsh-acp --setup` (issue 28): the key file (0600 from its creation, replaced atomically, read
// back trimmed, removed by logout) and the hidden read on a terminal, against a real pseudo
// terminal: what is typed is not echoed, and the terminal's echo is back afterwards.
#include "../common/temp_dir.hpp"
#include "server/setup_command.hpp"
#include "support/key_file.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <fcntl.h>
#include <pty.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace acp;

namespace {

// Reads the master side until `marker` arrives (what the terminal showed up to it).
std::string shown_until(int master, const std::string& marker) {
  std::string shown;
  char buf[256];
  while (shown.find(marker) == std::string::npos) {
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    shown.append(buf, static_cast<std::size_t>(n));
  }
  return shown;
}

} // namespace

BOOST_AUTO_TEST_SUITE(setup)

BOOST_AUTO_TEST_CASE(the_key_file_is_private_replaced_whole_and_removable) {
  acp::test::TempDir t("dsh-setup");
  const std::string file = t.path() + "/deep/er/deepseek-api-key";
  BOOST_TEST(support::read_key_file(file).empty());
  support::write_key_file(file, "sk-one");
  struct stat st {};
  BOOST_REQUIRE(::stat(file.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_REQUIRE(::stat((t.path() + "/deep/er").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);
  BOOST_TEST(support::read_key_file(file) == "sk-one");
  support::write_key_file(file, "sk-two");
  BOOST_TEST(support::read_key_file(file) == "sk-two");
  // Nothing else is left beside it.
  BOOST_TEST(std::distance(fs::directory_iterator(t.path() + "/deep/er"), fs::directory_iterator()) == 1);
  // Hand-edited files are read trimmed; what cannot be a key is no key.
  { std::ofstream(file) << "  sk-three \r\n"; }
  BOOST_TEST(support::read_key_file(file) == "sk-three");
  { std::ofstream(file) << "two words\n"; }
  BOOST_TEST(support::read_key_file(file).empty());
  BOOST_TEST(support::remove_key_file(file));
  BOOST_TEST(!support::remove_key_file(file));
  BOOST_TEST(!support::api_key_text(" \n"));
  BOOST_TEST(!support::api_key_text("sk-\x01"));
  BOOST_TEST(support::api_key_text("\tsk-x\n").value_or("") == "sk-x");
}

BOOST_AUTO_TEST_CASE(a_terminal_does_not_show_the_key_as_it_is_typed) {
  int master = -1, slave = -1;
  BOOST_REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  struct termios before {};
  BOOST_REQUIRE(::tcgetattr(slave, &before) == 0);
  BOOST_REQUIRE(before.c_lflag & ECHO);
  int prompt_pipe[2];
  BOOST_REQUIRE(::pipe(prompt_pipe) == 0);
  std::FILE* prompt = ::fdopen(prompt_pipe[1], "w");
  std::optional<std::string> line;
  std::thread reader([&] { line = server::read_secret_line(slave, "key: ", prompt); });
  // The prompt shows once echo is off: the key is typed in answer to it.
  std::string shown_prompt;
  char c = 0;
  while (shown_prompt != "key: " && ::read(prompt_pipe[0], &c, 1) == 1) shown_prompt += c;
  BOOST_REQUIRE(shown_prompt == "key: ");
  const std::string typed = "sk-typed-secret\n";
  BOOST_REQUIRE(::write(master, typed.data(), typed.size()) == static_cast<ssize_t>(typed.size()));
  reader.join();
  BOOST_TEST(line.value_or("") == "sk-typed-secret");
  // Echo is back on; text written after the read shows the terminal's output up to now.
  struct termios after {};
  BOOST_REQUIRE(::tcgetattr(slave, &after) == 0);
  BOOST_TEST((after.c_lflag & ECHO) != 0u);
  const std::string marker = "after-the-read";
  BOOST_REQUIRE(::write(slave, marker.data(), marker.size()) == static_cast<ssize_t>(marker.size()));
  const std::string shown = shown_until(master, marker);
  BOOST_TEST(shown.find("sk-typed") == std::string::npos, shown);
  std::fclose(prompt);
  ::close(prompt_pipe[0]);
  ::close(slave);
  ::close(master);
}

BOOST_AUTO_TEST_CASE(a_pipe_is_read_as_it_is) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  const std::string sent = "sk-piped\r\nmore";
  BOOST_REQUIRE(::write(fds[1], sent.data(), sent.size()) == static_cast<ssize_t>(sent.size()));
  ::close(fds[1]);
  std::FILE* prompt = std::tmpfile();
  BOOST_TEST(server::read_secret_line(fds[0], "key: ", prompt).value_or("") == "sk-piped");
  ::close(fds[0]);
  int empty[2];
  BOOST_REQUIRE(::pipe(empty) == 0);
  ::close(empty[1]);
  BOOST_TEST(!server::read_secret_line(empty[0], "key: ", prompt));
  ::close(empty[0]);
  std::fclose(prompt);
}

BOOST_AUTO_TEST_SUITE_END()
