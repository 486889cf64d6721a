// dsh-acp: flags, descriptor discipline, the event loop, exit codes (docs/configuration.md).
//
// fd discipline: frames go to a private duplicate of fd 1, and fd 1 itself is pointed at the log
// file, so a stray print from any library can never corrupt the protocol stream (and never reaches
// stderr, which some clients treat as an error).
#include "engine/engine.hpp"
#include "llm/openai/openai_config.hpp"
#include "handlers/store_source.hpp"
#include "refs/service.hpp"
#include "server/connection.hpp"
#include "server/provider_setup.hpp"
#include "server/server_config.hpp"
#include "server/setup_command.hpp"
#include "server/store_command.hpp"
#include "store/errors.hpp"
#include "store/open_backend.hpp"
#include "store/pg/url.hpp"
#include "store/session_store.hpp"
#include "store/store_set.hpp"
#include "support/build_info.hpp"
#include "support/paths.hpp"
#include "support/background_threads.hpp"
#include "support/child_process.hpp"
#include "support/config.hpp"
#include "support/sandbox.hpp"
#include "support/secrets.hpp"
#include "support/log.hpp"
#include "transport/stdio_transport.hpp"
#include "transport/transport.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <malloc.h>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unistd.h>
#include <vector>

using namespace acp;

namespace {

int fail_usage(const std::string& message) {
  std::fprintf(stderr, "dsh-acp: %s\n", message.c_str());
  return 2;
}

/// A start-up mistake of the user's: main prints it on stderr and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void tune_allocator() {
  // Blocks of 1 MiB and more (a huge message's line, its parsed event, read windows) are mapped
  // and unmapped on their own. glibc's default raises this threshold to 32 MiB after the first big
  // free, after which such blocks stay in the heap: a replay of a log with a 48 MB message peaked
  // at 140 MB over baseline instead of 104 (measured with bench/store_bench.py's replay).
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // Fixing the mmap threshold also fixes the trim threshold at its 128 KiB default (glibc would
  // keep it at twice the dynamic mmap threshold): the heap then shrank after every replay batch
  // was written and the next batch faulted its pages in again. A page fault costs ~11 us on this
  // project's (virtualised) machines: a 60 MB replay took 11,000 faults, 6,700 with this.
  ::mallopt(M_TRIM_THRESHOLD, 2 << 20);
}

/// The actions that are not the ACP server (help, schema, version, setup): their exit code, or
/// nothing when the server is to run.
std::optional<int> run_other_action(const support::CliResult& cli) {
  if (cli.action == support::CliAction::help) {
    std::cout << support::usage_text();
    return 0;
  }
  if (cli.action == support::CliAction::config_schema) {
    std::cout << support::config_schema_text();
    return 0;
  }
  if (cli.action == support::CliAction::version) {
    std::cout << "dsh-acp " << support::build_version << " (commit " << support::build_commit << ")\n";
    return 0;
  }
  // The terminal authentication method: before the log or anything else opens (nothing of the
  // key is ever logged).
  if (cli.action == support::CliAction::setup) return server::run_setup(cli.config);
  return std::nullopt;
}

std::string read_system_prompt(const support::Config& config) {
  if (config.system_prompt.empty()) return engine::default_system_prompt();
  std::ifstream in(config.system_prompt, std::ios::binary);
  if (!in) throw UsageError("--system-prompt " + config.system_prompt + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every root of the listing: the configured ones, and the harness's own root when none was named
// and it exists (read-only then: docs/sessions.md says how to make it writable). A root's layout and
// encoding are checked now, so a root that holds both encodings is a start-up error; the full
// open (the listing index sweep) waits for first use, so it never delays initialize.
// A store is a root of log files or a PostgreSQL database (issue 17); the first takes new
// sessions. A database is connected and its schema checked now, so a bad URL, a missing or
// newer schema or a refused role is a start-up error like a bad root.
struct StoreSpec {
  std::optional<store::StoreOptions> root;
  std::unique_ptr<store::Backend> database;  ///< opened at start-up, handed to the StoreSet
};
// Shared with the (copyable) opener of open_stores, which moves the databases out once.
using StoreSpecs = std::shared_ptr<std::vector<StoreSpec>>;

StoreSpec root_spec(const support::Config& config, const std::string& path, bool read_only) {
  store::StoreOptions o;
  o.root = path;
  o.cache_dir = config.cache_dir;
  o.read_only = read_only;
  o.lock_timeout = std::chrono::milliseconds(config.lock_timeout_ms);
  if (config.store_compression == "zstd") o.encoding = store::Encoding::zstd;
  if (config.store_compression == "none") o.encoding = store::Encoding::none;
  o.generation = store::parse_generation(config.store_generation);
  const bool harness_root = support::same_path(path, config.harness_store);
  o.default_generation = harness_root ? store::Generation::project_dirs : store::Generation::flat;
  return {std::move(o), nullptr};
}

// Opened as `dsh-acp store` opens one (open_backend.hpp); a directory waits for first use (above).
StoreSpec database_spec(const support::Config& config, const std::string& url) {
  store::StoreOptions o;
  o.generation = store::parse_generation(config.store_generation);
  o.lock_timeout = std::chrono::milliseconds(config.lock_timeout_ms);
  try {
    return {std::nullopt, store::open_backend(url, o)};
  } catch (const store::StoreError& e) {
    // The store's own messages name it by its redacted URL.
    throw UsageError(std::string("--store ") + store::pg::redact_url(url) + ": " + e.what());
  }
}

StoreSpecs store_specs(const support::Config& config) {
  auto specs = std::make_shared<std::vector<StoreSpec>>();
  for (const auto& spec : config.stores)
    specs->push_back(store::pg::is_postgres_url(spec) ? database_spec(config, spec) : root_spec(config, spec, false));
  if (!config.stores_configured && support::is_directory(config.harness_store) &&
      !support::same_path(config.harness_store, config.store))
    specs->push_back(root_spec(config, config.harness_store, true));
  for (const auto& s : *specs) {
    if (!s.root) continue;
    try {
      store::SessionStore::check_root(*s.root);
    } catch (const store::StoreError& e) {
      throw UsageError(std::string("--store ") + s.root->root + ": " + e.what());
    }
  }
  return specs;
}

std::function<std::unique_ptr<store::StoreSet>()> open_stores(StoreSpecs specs) {
  return [specs] {
    std::vector<std::unique_ptr<store::Backend>> open;
    for (auto& s : *specs) {
      if (s.root) open.push_back(std::make_unique<store::SessionStore>(*s.root));
      else open.push_back(std::move(s.database));
    }
    return std::make_unique<store::StoreSet>(std::move(open));
  };
}

std::string describe_stores(const std::vector<StoreSpec>& specs) {
  std::string list;
  for (const auto& s : specs)
    list += (list.empty() ? "" : ", ") +
            (s.root ? s.root->root + (s.root->read_only ? " (read-only)" : "") : s.database->name());
  return list;
}

/// Private duplicates of stdin and stdout (-1 where there is none).
struct ProtocolFds {
  int frames = -1;
  int input = -1;
};

// fd 1 is pointed at the log file (or /dev/null) once its duplicate for frames is taken.
ProtocolFds take_protocol_fds(const support::Config& config) {
  ProtocolFds fds;
  fds.frames = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  fds.input = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  std::string log_refused;
  int log_fd = log::init(config.log_file, log::parse_level(config.log_level), &log_refused);
  // Worth a line on stderr: the log is refused on purpose, and nothing else would say so.
  if (!log_refused.empty()) std::fprintf(stderr, "dsh-acp: %s\n", log_refused.c_str());
  int sink = log_fd >= 0 ? log_fd : ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (sink >= 0) ::dup2(sink, STDOUT_FILENO);
  return fds;
}

void log_start(const support::Config& config, const std::vector<StoreSpec>& specs) {
  // Orphans of what we start come to us, so that none outlives its call, its session or us.
  if (!support::adopt_orphans())
    log::warn("cannot become a subreaper (PR_SET_CHILD_SUBREAPER): processes a command leaves behind may outlive it");
  if (!support::sandbox_missing_reason().empty())
    log::warn(std::string("commands run without a sandbox: ") + support::sandbox_missing_reason());
  log::info(std::string("dsh-acp ") + support::build_version + " (commit " + support::build_commit + ") starting; provider " + config.provider + ", stores " +
            describe_stores(specs) + (config.config_file.empty() ? "" : ", config " + config.config_file));
}

refs::Config reference_config(const support::Config& config) {
  refs::Config c;
  c.max_references = config.max_references;
  c.candidate_limit = config.candidate_limit;
  c.max_reference_bytes = config.max_reference_bytes;
  return c;
}

/// Runs the connection until stdin ends or a signal stops it; the exit code.
int run_connection(boost::asio::io_context& io, server::Connection& connection) {
  // SIGHUP: the editor (or its terminal) went away; end like stdin EOF instead of dying unanswered.
  boost::asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    log::info("signal " + std::to_string(signo) + " received; shutting down");
    connection.stop();
  });
  boost::asio::co_spawn(io, connection.run(), [&](std::exception_ptr error) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        log::error(std::string("fatal: ") + e.what());
      }
    }
    signals.cancel();
  });
  try {
    io.run();
  } catch (const std::exception& e) {
    log::error(std::string("fatal: ") + e.what());
    support::kill_all_children();
    return 1;
  }
  return 0;
}

/// The ACP server on the protocol descriptors until its input ends; the exit code.
int serve(const support::Config& config, const std::vector<std::string>& args, engine::StoreHandle& store,
          ProtocolFds fds, const std::string& system_prompt) {
  boost::asio::io_context io{1};
  // Session strands and short store work (appends, listings) share this pool. Lock waits, replays
  // and other bulk reads run on the engine's threads of their own (engine.hpp), never here.
  // Started by the first work posted: answering initialize needs none of them. Signals blocked
  // in them, as in the Asio thread_pool they replace: they go to this thread.
  support::BackgroundThreads blocking(8, /*lowered=*/false, /*block_signals=*/true);
  server::ProviderSetup provider_setup;
  try {
    // authenticate re-reads the environment and the config file with the same arguments.
    provider_setup = server::make_provider(config, args, io.get_executor());
  } catch (const llm::ConfigError& e) {
    return fail_usage(e.what());
  }
  llm::Provider* provider = provider_setup.provider.get();
  if (!provider_setup.auth->ready())
    log::warn("provider " + config.provider + " has no API key: sessions answer -32000 until authenticate finds one");

  if (fds.input < 0) {
    log::info("no standard input; exiting");
    return 0;
  }
  refs::SessionReferenceService references(std::make_shared<handlers::StoreSessionSource>(store),
                                           reference_config(config));
  std::unique_ptr<transport::Transport> stdio = transport::make_stdio_transport(io.get_executor(), fds.input, fds.frames);
  server::Connection connection(io.get_executor(), blocking.executor(), *stdio, config, *provider, store, references,
                                system_prompt);
  connection.set_provider_auth(*provider_setup.auth);
  if (int status = run_connection(io, connection); status != 0) return status;
  blocking.join();
  // Whatever is still running (a call abandoned at shutdown, what it left behind) ends with us.
  support::kill_all_children();
  log::info("exiting");
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Before anything reads the environment or starts a thread: the provider keys and the store
  // password leave the block /proc/<pid>/environ shows (secrets.hpp).
  support::hide_secrets_from_proc();
  tune_allocator();
  // `dsh-acp store copy|verify|migrate`: a tool run, not the ACP server.
  if (argc > 1 && std::string_view(argv[1]) == "store")
    return server::run_store_command(std::vector<std::string>(argv + 2, argv + argc));
  const std::vector<std::string> args(argv + 1, argv + argc);
  support::CliResult cli;
  try {
    cli = server::load_config(args, support::process_environment());
  } catch (const support::ConfigError& e) {
    return fail_usage(e.what());
  }
  if (auto status = run_other_action(cli)) return *status;
  const support::Config& config = cli.config;

  std::string system_prompt;
  StoreSpecs specs;
  try {
    system_prompt = read_system_prompt(config);
    specs = store_specs(config);
  } catch (const UsageError& e) {
    return fail_usage(e.what());
  }
  engine::StoreHandle store(open_stores(specs));

  const ProtocolFds fds = take_protocol_fds(config);
  if (fds.frames < 0) return 1;
  std::signal(SIGPIPE, SIG_IGN);
  log_start(config, *specs);
  return serve(config, args, store, fds, system_prompt);
}
