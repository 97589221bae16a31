// Who the client is, by address, for per-IP limits and logs (DESIGN.md "Identity"):
// the socket peer, unless the peer is a trusted proxy; then the forwarding header the
// operator named (X-Forwarded-For, or RFC 7239 Forwarded) is walked from the right past
// trusted hops, and the first hop that is not trusted is the client. Headers from an
// untrusted peer change nothing. IPv4-mapped IPv6 addresses are IPv4; an IPv6 client is
// keyed by its /64 (one host usually holds the whole /64). Pure; thread-compatible
// (a TrustedProxies is immutable once built and may be shared).
#pragma once

#include <boost/asio/ip/address.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// "10.0.0.0/8", "2001:db8::/32", or an address alone (/32 or /128). Addresses are
// normalized as below (an IPv4-mapped block is an IPv4 block); host bits must be zero.
struct Cidr {
  boost::asio::ip::address network;
  int prefix = 0;
};
std::optional<Cidr> ParseCidr(std::string_view text);

// An address as sluice keys it: IPv4-mapped IPv6 becomes IPv4; zone ids are refused.
std::optional<boost::asio::ip::address> ParseAddress(std::string_view text);

// Which forwarding header a trusted proxy sets.
enum class ForwardedHeader { kXForwardedFor, kForwarded };

class TrustedProxies {
 public:
  TrustedProxies() = default;
  TrustedProxies(std::vector<Cidr> blocks, ForwardedHeader header)
      : blocks_(std::move(blocks)), header_(header) {}

  bool Contains(const boost::asio::ip::address& a) const;
  bool empty() const { return blocks_.empty(); }
  ForwardedHeader header() const { return header_; }

 private:
  std::vector<Cidr> blocks_;
  ForwardedHeader header_ = ForwardedHeader::kXForwardedFor;
};

struct ClientIp {
  std::string address;     // the client's address, normalized ("" if the peer's is unknown)
  std::string key;         // for limits: the IPv4 address, or the IPv6 /64 ("2001:db8:1:2::/64")
  bool forwarded = false;  // read from a forwarding header (the peer was a trusted proxy)
};

// At most this many hops of a forwarding header are looked at, from the right.
inline constexpr int kMaxForwardedHops = 32;

// `peer`: the socket's remote address as text. `header_values`: every value of the
// header that `proxies` names, in the order received (several header lines form one
// list). A hop that does not parse ("unknown", an obfuscated name, garbage) ends the
// walk: the last trusted hop is then the client.
ClientIp ResolveClientIp(std::string_view peer, const std::vector<std::string_view>& header_values,
                         const TrustedProxies& proxies);

// The hops of one X-Forwarded-For or Forwarded value, left to right, as written (the
// address part only: ports, brackets and quotes removed; "" for a hop with no address).
std::vector<std::string> ForwardedHops(std::string_view value, ForwardedHeader header);

}  // namespace sluice
