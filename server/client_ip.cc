#include "server/client_ip.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace sluice {
namespace {

using boost::asio::ip::address;
using boost::asio::ip::address_v4;
using boost::asio::ip::address_v6;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits on `sep`, outside double quotes (a quoted string may hold the separator).
std::vector<std::string_view> SplitOutsideQuotes(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (s[i] == '\\' && quoted) {
      ++i;  // an escaped character
    } else if (s[i] == sep && !quoted) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(std::min(start, s.size())));
  return parts;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "1.2.3.4", "1.2.3.4:80", "[::1]", "[::1]:80", "::1": the address part.
std::string_view AddressPart(std::string_view hop) {
  hop = Trim(hop);
  if (!hop.empty() && hop.front() == '[') {
    const size_t close = hop.find(']');
    if (close == std::string_view::npos) return {};
    std::string_view rest = hop.substr(close + 1);
    if (!rest.empty() && !(rest.front() == ':' && AllDigits(rest.substr(1)))) return {};
    return hop.substr(1, close - 1);
  }
  // One colon: IPv4 with a port. More: a bare IPv6 address.
  const size_t colon = hop.find(':');
  if (colon != std::string_view::npos && hop.find(':', colon + 1) == std::string_view::npos) {
    if (!AllDigits(hop.substr(colon + 1))) return {};
    return hop.substr(0, colon);
  }
  return hop;
}

// The address of one Forwarded element's for= parameter ("" if it has none).
std::string_view ForwardedFor(std::string_view element) {
  for (std::string_view pair : SplitOutsideQuotes(element, ';')) {
    pair = Trim(pair);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = Trim(pair.substr(0, eq));
    if (name.size() != 3 || (name[0] | 0x20) != 'f' || (name[1] | 0x20) != 'o' ||
        (name[2] | 0x20) != 'r') {
      continue;
    }
    std::string_view value = Trim(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return {};
}

address Masked(const address& a, int prefix) {
  if (a.is_v4()) {
    const uint32_t bits = a.to_v4().to_uint();
    const uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
    return address_v4(bits & mask);
  }
  address_v6::bytes_type b = a.to_v6().to_bytes();
  for (int i = 0; i < 16; ++i) {
    const int keep = std::clamp(prefix - 8 * i, 0, 8);
    b[static_cast<size_t>(i)] &= static_cast<unsigned char>(keep == 0 ? 0 : 0xFF << (8 - keep));
  }
  return address_v6(b);
}

std::string KeyOf(const address& a) {
  if (a.is_v4()) return a.to_string();
  return Masked(a, 64).to_string() + "/64";
}

}  // namespace

std::optional<address> ParseAddress(std::string_view text) {
  if (text.empty() || text.size() > 45 || text.find('%') != std::string_view::npos) {
    return std::nullopt;  // longer than any IPv6 text; zone ids name local interfaces
  }
  boost::system::error_code ec;
  address a = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return address(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()));
  }
  return a;
}

std::optional<Cidr> ParseCidr(std::string_view text) {
  text = Trim(text);
  const size_t slash = text.find('/');
  auto a = ParseAddress(text.substr(0, slash));
  if (!a) return std::nullopt;
  // An IPv4-mapped block ("::ffff:10.0.0.0/104") is the IPv4 block it maps.
  const bool mapped = a->is_v4() && text.substr(0, slash).find(':') != std::string_view::npos;
  const int max = a->is_v4() ? 32 : 128;
  int prefix = max;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    if (!AllDigits(digits) || digits.size() > 3) return std::nullopt;
    std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (mapped) {
      if (prefix < 96) return std::nullopt;
      prefix -= 96;
    }
    if (prefix > max) return std::nullopt;
  }
  if (Masked(*a, prefix) != *a) return std::nullopt;  // host bits set: a typo, most likely
  return Cidr{*a, prefix};
}

bool TrustedProxies::Contains(const address& a) const {
  return std::any_of(blocks_.begin(), blocks_.end(), [&](const Cidr& c) {
    return c.network.is_v4() == a.is_v4() && Masked(a, c.prefix) == c.network;
  });
}

std::vector<std::string> ForwardedHops(std::string_view value, ForwardedHeader header) {
  std::vector<std::string> hops;
  for (std::string_view element : SplitOutsideQuotes(value, ',')) {
    std::string_view hop =
        header == ForwardedHeader::kForwarded ? ForwardedFor(element) : Trim(element);
    hops.emplace_back(AddressPart(hop));
  }
  return hops;
}

ClientIp ResolveClientIp(std::string_view peer, const std::vector<std::string_view>& header_values,
                         const TrustedProxies& proxies) {
  ClientIp out;
  std::optional<address> client = ParseAddress(peer);
  if (!client) return out;  // no peer address (not a TCP socket): nothing to key by
  if (proxies.Contains(*client)) {
    std::vector<std::string> hops;
    for (std::string_view v : header_values) {
      std::vector<std::string> more = ForwardedHops(v, proxies.header());
      hops.insert(hops.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
    }
    int looked = 0;
    for (auto it = hops.rbegin(); it != hops.rend() && looked < kMaxForwardedHops; ++it, ++looked) {
      std::optional<address> hop = ParseAddress(*it);
      if (!hop) break;  // the last trusted hop wrote something unusable: it is the client
      client = hop;
      out.forwarded = true;
      if (!proxies.Contains(*hop)) break;
    }
  }
  out.address = client->to_string();
  out.key = KeyOf(*client);
  return out;
}

}  // namespace sluice
