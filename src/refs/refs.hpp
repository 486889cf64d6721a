// Everything a host needs from the session-reference library, in one include: errors, config,
// URIs, mentions, value types and the service. The remaining headers (projection, retention,
// serialization, json_string, candidates) are building blocks exposed for tests and benchmarks.
#pragma once

#include "refs/config.hpp"
#include "refs/errors.hpp"
#include "refs/mentions.hpp"
#include "refs/service.hpp"
#include "refs/types.hpp"
#include "refs/uri.hpp"
