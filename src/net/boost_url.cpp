// Boost.URL's definitions: Debian ships it without a compiled library, so they are built here, once.
#include <boost/url/src.hpp>
