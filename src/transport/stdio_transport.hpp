// The production transport: a pair of file descriptors (the duplicates main() makes of 0 and 1).
#pragma once

#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>

namespace acp::transport {

/// Takes ownership of both descriptors. A pipe or socket as output also reports its reader's
/// death through output_closed() (epoll reports EPOLLERR on a pipe without readers).
std::unique_ptr<Transport> make_stdio_transport(boost::asio::any_io_executor executor, int in_fd, int out_fd);

} // namespace acp::transport
