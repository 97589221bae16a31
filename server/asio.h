// The one include of Boost.Asio. <utility> must come first: Boost 1.74's Asio with
// g++ 12 in C++20 mode needs std::exchange before awaitable.hpp (NOTES.md pitfall 3).
#pragma once

// clang-format off
#include <utility>
#include <boost/asio.hpp>
// clang-format on
