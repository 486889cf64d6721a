// `dsh-acp store copy|verify|migrate`: moving sessions between stores and checking them, outside
// the ACP server. Results (problems, summaries) go to stdout, progress and errors to stderr.
// Exit codes: 0 ok, 1 problems found or copy incomplete, 2 usage or start-up errors.
#pragma once

#include <string>
#include <vector>

namespace acp::server {

/// Runs `dsh-acp store ARGS...` (`args` without "store").
int run_store_command(const std::vector<std::string>& args);

/// The `dsh-acp store --help` text.
std::string store_usage_text();

} // namespace acp::server
