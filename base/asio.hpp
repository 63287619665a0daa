// Boost 1.74's Asio under GCC 12 in C++20 mode needs <utility> before it.
#pragma once
#include <utility>
#include <boost/asio.hpp>
