// Commands the server runs itself, against the real kernel: Landlock keeps their writes inside the
// session's roots and the temporary directories, and nothing they start outlives the call
// (`setsid`, double forks), whether it times out, is cancelled or ends on its own. Processes are
// found by the pids they write into files; "gone" is read from /proc.
#include "support/child_process.hpp"
#include "support/sandbox.hpp"
#include "support/secrets.hpp"
#include "tools/command.hpp"
#include "process_gone.hpp"
#include "run_coroutine.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace acp;
using namespace acp::tools;

namespace {

bool under(const fs::path& p, const std::string& dir) {
  auto d = fs::weakly_canonical(dir).string();
  auto s = p.string();
  return s == d || s.rfind(d + "/", 0) == 0;
}

// A directory outside every temporary directory (there, writes are allowed anyway): beneath the
// test's working directory (the build tree), else $HOME.
struct Place {
  fs::path dir;
  Place() {
    std::vector<fs::path> candidates{fs::current_path()};
    if (const char* home = std::getenv("HOME")) candidates.emplace_back(home);
    for (const auto& c : candidates) {
      bool temporary = false;
      for (const auto& t : support::temporary_directories()) temporary = temporary || under(fs::canonical(c), t);
      if (temporary) continue;
      std::string tmpl = (fs::canonical(c) / "dsh-sandbox-XXXXXX").string();
      if (::mkdtemp(tmpl.data())) {
        dir = tmpl;
        break;
      }
    }
    BOOST_REQUIRE_MESSAGE(!dir.empty(), "no writable directory outside the temporary directories");
    fs::create_directories(dir / "root");
    fs::create_directories(dir / "outside");
  }
  ~Place() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string root() const { return (dir / "root").string(); }
  std::string outside() const { return (dir / "outside").string(); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandOutcome run(CommandRequest r) {
  boost::asio::io_context io;
  return run_coroutine(io, run_command(std::move(r)));
}

// Runs the command and cancels it (the turn's cancellation) once every file in `ready` is there:
// an event the command announces, polled on the test's own loop.
CommandOutcome run_cancelled_when(CommandRequest r, std::vector<fs::path> ready) {
  boost::asio::io_context io;
  boost::asio::cancellation_signal cancel;
  boost::asio::steady_timer poll(io);
  std::function<void()> check = [&] {
    bool all = true;
    for (const auto& f : ready) all = all && fs::exists(f) && fs::file_size(f) > 0;
    if (all) return cancel.emit(boost::asio::cancellation_type::terminal);
    poll.expires_after(std::chrono::milliseconds(5));
    poll.async_wait([&](boost::system::error_code ec) {
      if (!ec) check();
    });
  };
  std::optional<CommandOutcome> out;
  std::exception_ptr error;
  boost::asio::co_spawn(io, run_command(std::move(r)),
                        boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, CommandOutcome o) {
                          error = e;
                          if (!e) out = std::move(o);
                          poll.cancel();
                        }));
  check();
  while (!out && !error) io.run_one();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

// A shell that leaves two sleepers behind, one in a session of its own, one double-forked (its
// parent gone at once); each writes its pid to a file before it becomes `sleep`.
std::string leaving_sleepers(const fs::path& dir) {
  const std::string a = (dir / "setsid.pid").string(), b = (dir / "double.pid").string();
  return "setsid sh -c 'echo $$ > " + a + ".tmp; mv " + a + ".tmp " + a + "; exec sleep 1000' & " +
         "(sh -c 'echo $$ > " + b + ".tmp; mv " + b + ".tmp " + b + "; exec sleep 1000' &); " +
         "while [ ! -s " + a + " ] || [ ! -s " + b + " ]; do sleep 0.01; done; ";
}

std::vector<long> sleepers(const fs::path& dir) {
  std::vector<long> pids;
  for (const char* name : {"setsid.pid", "double.pid"}) {
    std::string text = slurp(dir / name);
    BOOST_REQUIRE_MESSAGE(!text.empty(), std::string(name) + " was written");
    pids.push_back(std::stol(text));
  }
  return pids;
}

struct Subreaper {
  Subreaper() { BOOST_REQUIRE(support::adopt_orphans()); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(command_sandbox)

BOOST_AUTO_TEST_CASE(writes_outside_the_roots_are_refused_and_inside_allowed) {
  BOOST_REQUIRE_MESSAGE(std::string(support::sandbox_name()) == "landlock",
                        "this kernel has no usable Landlock: " + support::sandbox_missing_reason());
  Place p;
  std::ofstream(fs::path(p.outside()) / "keep.txt") << "kept\n";
  const std::string tmp_file = "/tmp/dsh-sandbox-test-" + std::to_string(::getpid());
  CommandRequest req{"echo in > inside.txt && mkdir sub && mv inside.txt sub/ && echo ok-inside; "
                     "echo out > ../outside/new.txt; mkdir ../outside/dir; ln -s x ../outside/link; "
                     "mkfifo ../outside/fifo; rm -f ../outside/keep.txt; echo more >> ../outside/keep.txt; "
                     ": > ../outside/keep.txt; mv ../outside/keep.txt sub/; "
                     "echo t > " + tmp_file + " && echo ok-tmp; echo x > /dev/null && echo ok-null"};
  req.workdir = p.root();
  req.writable_roots = {p.root()};
  auto r = run(req);
  BOOST_TEST(r.output.find("ok-inside") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("ok-tmp") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("ok-null") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("Permission denied") != std::string::npos, r.output);
  BOOST_TEST(fs::exists(fs::path(p.root()) / "sub" / "inside.txt"));
  // Outside: nothing created, nothing removed, moved or changed.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(p.outside())) names.push_back(e.path().filename().string());
  BOOST_TEST(names == std::vector<std::string>{"keep.txt"});
  BOOST_TEST(slurp(fs::path(p.outside()) / "keep.txt") == "kept\n");
  BOOST_TEST(slurp(tmp_file) == "t\n");
  fs::remove(tmp_file);
}

BOOST_AUTO_TEST_CASE(an_unconfined_request_writes_anywhere) {
  Place p;
  CommandRequest req{"echo out > ../outside/new.txt"};
  req.workdir = p.root();
  BOOST_TEST(run(req).exit_code.value_or(-1) == 0);
  BOOST_TEST(slurp(fs::path(p.outside()) / "new.txt") == "out\n");
}

BOOST_AUTO_TEST_CASE(what_a_command_leaves_behind_dies_with_it) {
  Subreaper adopted;
  Place p;
  CommandRequest req{leaving_sleepers(p.dir) + "echo done"};
  req.workdir = p.root();
  auto r = run(req);
  BOOST_TEST(r.exit_code.value_or(-1) == 0);
  for (long pid : sleepers(p.dir)) BOOST_TEST(gone(pid), "pid " << pid);
}

BOOST_AUTO_TEST_CASE(a_timeout_ends_what_left_the_group) {
  Subreaper adopted;
  Place p;
  // The shell waits for the sleepers to exist, then for ever: the timeout ends it.
  CommandRequest req{leaving_sleepers(p.dir) + "sleep 1000"};
  req.workdir = p.root();
  // The timeout must fall after both sleepers exist; on a loaded machine that can take a while, so
  // a run whose timeout came first is tried again with a longer one (what it started died anyway).
  for (req.timeout = std::chrono::milliseconds(2000);; req.timeout *= 4) {
    auto r = run(req);
    BOOST_TEST(r.timed_out);
    if (fs::exists(p.dir / "setsid.pid") && fs::exists(p.dir / "double.pid")) break;
    BOOST_TEST_MESSAGE("the timeout came before the sleepers started; again with " << (req.timeout * 4).count() << " ms");
  }
  for (long pid : sleepers(p.dir)) BOOST_TEST(gone(pid), "pid " << pid);
}

BOOST_AUTO_TEST_CASE(a_command_inherits_no_descriptor_but_its_three) {
  // A descriptor without close-on-exec, as Asio's sockets are: a model connection of another
  // session must not reach a command.
  int leaky[2];
  BOOST_REQUIRE(::pipe(leaky) == 0);
  CommandRequest req{"ls /proc/self/fd"};
  req.workdir = "/";
  auto out = run(req).output;
  ::close(leaky[0]);
  ::close(leaky[1]);
  std::istringstream fds(out);
  std::vector<std::string> seen;
  for (std::string fd; fds >> fd;) seen.push_back(fd);
  // 0, 1, 2 and the directory ls reads.
  BOOST_TEST(seen.size() == 4u, out);
  for (const std::string& fd : seen) BOOST_TEST((fd == "0" || fd == "1" || fd == "2" || fd == "3"), out);
}

BOOST_AUTO_TEST_CASE(a_child_we_had_before_adopting_is_left_alone) {
  // A launcher may fork a helper and then exec us: that child is ours by inheritance. The sweep
  // after a command must not kill it.
  pid_t helper = ::fork();
  BOOST_REQUIRE(helper >= 0);
  if (helper == 0) {
    ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Subreaper adopted;
  Place p;
  CommandRequest req{leaving_sleepers(p.dir) + "echo done"};
  req.workdir = p.root();
  BOOST_TEST(run(req).exit_code.value_or(-1) == 0);
  for (long pid : sleepers(p.dir)) BOOST_TEST(gone(pid), "pid " << pid);
  int status = 0;
  BOOST_TEST(::waitpid(helper, &status, WNOHANG) == 0, "the inherited child is still running");
  ::kill(helper, SIGKILL);
  ::waitpid(helper, &status, 0);
}

BOOST_AUTO_TEST_CASE(a_cancel_ends_what_left_the_group) {
  Subreaper adopted;
  Place p;
  CommandRequest req{leaving_sleepers(p.dir) + "sleep 1000"};
  req.workdir = p.root();
  auto r = run_cancelled_when(req, {p.dir / "setsid.pid", p.dir / "double.pid"});
  BOOST_TEST(r.cancelled);
  for (long pid : sleepers(p.dir)) BOOST_TEST(gone(pid), "pid " << pid);
}

BOOST_AUTO_TEST_CASE(secrets_are_not_passed_on) {
  ::setenv("PGPASSWORD", "pg-secret", 1);
  ::setenv("DEEPSEEK_API_KEY", "sk-secret", 1);
  CommandRequest req{"echo ${PGPASSWORD:-none} ${DEEPSEEK_API_KEY:-none}"};
  req.workdir = "/";
  BOOST_TEST(run(req).output == "none none\n");
  ::unsetenv("PGPASSWORD");
  ::unsetenv("DEEPSEEK_API_KEY");
}

BOOST_AUTO_TEST_SUITE_END()
