// Client addresses behind proxies (issue 17 "Identity done right"): the socket peer
// unless it is trusted; forwarding headers walked from the right past trusted hops;
// spoofed headers from untrusted peers change nothing; IPv4-mapped IPv6 is IPv4; IPv6
// clients are keyed by their /64.
#include "server/client_ip.h"

#include <catch2/catch.hpp>

namespace sluice {
namespace {

TrustedProxies Trust(std::vector<std::string> cidrs,
                     ForwardedHeader header = ForwardedHeader::kXForwardedFor) {
  std::vector<Cidr> blocks;
  for (const std::string& c : cidrs) {
    auto cidr = ParseCidr(c);
    REQUIRE(cidr.has_value());
    blocks.push_back(*cidr);
  }
  return TrustedProxies(std::move(blocks), header);
}

TEST_CASE("CIDR blocks parse, normalize and refuse typos", "[client_ip]") {
  auto v4 = ParseCidr("10.0.0.0/8");
  REQUIRE(v4);
  REQUIRE(v4->prefix == 8);
  REQUIRE(ParseCidr("127.0.0.1")->prefix == 32);
  REQUIRE(ParseCidr("2001:db8::/32")->prefix == 32);
  REQUIRE(ParseCidr("::1")->prefix == 128);
  // An IPv4-mapped block is the IPv4 block.
  auto mapped = ParseCidr("::ffff:10.0.0.0/104");
  REQUIRE(mapped);
  REQUIRE(mapped->network.is_v4());
  REQUIRE(mapped->prefix == 8);
  for (const char* bad :
       {"10.0.0.1/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8/8",
        "fe80::1%eth0/64", "not an address", "", "/8", "::ffff:10.0.0.0/95", "10.0.0.0/0008"}) {
    CAPTURE(bad);
    REQUIRE_FALSE(ParseCidr(bad).has_value());
  }
}

TEST_CASE("without trusted proxies the client is the socket peer", "[client_ip]") {
  const ClientIp c = ResolveClientIp("203.0.113.7", {"198.51.100.1"}, TrustedProxies());
  REQUIRE(c.address == "203.0.113.7");
  REQUIRE(c.key == "203.0.113.7");
  REQUIRE_FALSE(c.forwarded);
}

TEST_CASE("spoofed forwarding headers from an untrusted peer change nothing", "[client_ip]") {
  const TrustedProxies proxies = Trust({"10.0.0.0/8"});
  for (std::string_view spoof : {"1.1.1.1", "10.0.0.5", "1.1.1.1, 10.0.0.1", "garbage"}) {
    const ClientIp c = ResolveClientIp("198.51.100.9", {spoof}, proxies);
    REQUIRE(c.address == "198.51.100.9");
    REQUIRE_FALSE(c.forwarded);
  }
  const TrustedProxies fwd = Trust({"10.0.0.0/8"}, ForwardedHeader::kForwarded);
  REQUIRE(ResolveClientIp("198.51.100.9", {"for=1.1.1.1"}, fwd).address == "198.51.100.9");
}

TEST_CASE("X-Forwarded-For is walked from the right past trusted hops", "[client_ip]") {
  const TrustedProxies proxies = Trust({"10.0.0.0/8", "192.168.1.1"});
  // The client forged "6.6.6.6"; the first proxy appended the real client.
  ClientIp c = ResolveClientIp("10.0.0.2", {"6.6.6.6, 203.0.113.50, 192.168.1.1"}, proxies);
  REQUIRE(c.address == "203.0.113.50");
  REQUIRE(c.forwarded);
  // Several header lines form one list, in order.
  c = ResolveClientIp("10.0.0.2", {"6.6.6.6, 203.0.113.51", "10.1.1.1"}, proxies);
  REQUIRE(c.address == "203.0.113.51");
  // Every hop trusted: the leftmost is the client.
  c = ResolveClientIp("10.0.0.2", {"10.9.9.9, 10.0.0.3"}, proxies);
  REQUIRE(c.address == "10.9.9.9");
  // A trusted peer that sent no header is itself the client.
  c = ResolveClientIp("10.0.0.2", {}, proxies);
  REQUIRE(c.address == "10.0.0.2");
  REQUIRE_FALSE(c.forwarded);
  // A hop that does not parse ends the walk at the last trusted hop.
  c = ResolveClientIp("10.0.0.2", {"203.0.113.9, unknown, 10.0.0.7"}, proxies);
  REQUIRE(c.address == "10.0.0.7");
  // Ports and brackets are dropped.
  c = ResolveClientIp("10.0.0.2", {"203.0.113.60:4711"}, proxies);
  REQUIRE(c.address == "203.0.113.60");
  c = ResolveClientIp("10.0.0.2", {"[2001:db8::1]:4711"}, proxies);
  REQUIRE(c.address == "2001:db8::1");
}

TEST_CASE("RFC 7239 Forwarded: the for= of each element, quoted or not", "[client_ip]") {
  const TrustedProxies proxies = Trust({"10.0.0.0/8"}, ForwardedHeader::kForwarded);
  ClientIp c = ResolveClientIp(
      "10.0.0.2", {R"(for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https, For=10.0.0.9)"},
      proxies);
  REQUIRE(c.address == "2001:db8:cafe::17");
  REQUIRE(c.key == "2001:db8:cafe::/64");
  // An obfuscated identifier ends the walk.
  c = ResolveClientIp("10.0.0.2", {"for=_hidden, for=10.0.0.4"}, proxies);
  REQUIRE(c.address == "10.0.0.4");
  // The X-Forwarded-For list is not read when Forwarded is configured (and vice versa).
  REQUIRE(ForwardedHops("1.2.3.4", ForwardedHeader::kForwarded) == std::vector<std::string>{""});
  REQUIRE(ForwardedHops("for=1.2.3.4", ForwardedHeader::kXForwardedFor) ==
          std::vector<std::string>{"for=1.2.3.4"});
}

TEST_CASE("IPv4-mapped IPv6 is IPv4; IPv6 clients are keyed by their /64", "[client_ip]") {
  ClientIp c = ResolveClientIp("::ffff:203.0.113.5", {}, TrustedProxies());
  REQUIRE(c.address == "203.0.113.5");
  REQUIRE(c.key == "203.0.113.5");
  // A mapped peer matches an IPv4 trusted block.
  c = ResolveClientIp("::ffff:10.0.0.2", {"203.0.113.8"}, Trust({"10.0.0.0/8"}));
  REQUIRE(c.address == "203.0.113.8");
  const ClientIp a = ResolveClientIp("2001:db8:1:2:aaaa::1", {}, TrustedProxies());
  const ClientIp b = ResolveClientIp("2001:db8:1:2:bbbb::2", {}, TrustedProxies());
  const ClientIp other = ResolveClientIp("2001:db8:1:3::1", {}, TrustedProxies());
  REQUIRE(a.key == "2001:db8:1:2::/64");
  REQUIRE(a.key == b.key);
  REQUIRE(a.key != other.key);
  REQUIRE(a.address != b.address);
}

TEST_CASE("only the last kMaxForwardedHops hops are looked at", "[client_ip]") {
  std::string list = "203.0.113.1";
  for (int i = 0; i < kMaxForwardedHops + 5; ++i) list += ", 10.0.0." + std::to_string(i % 250);
  const ClientIp c = ResolveClientIp("10.0.0.2", {list}, Trust({"10.0.0.0/8"}));
  REQUIRE(c.address.rfind("10.0.0.", 0) == 0);  // a trusted hop, not the far client
}

TEST_CASE("a peer that is not an address yields no key", "[client_ip]") {
  REQUIRE(ResolveClientIp("", {"1.2.3.4"}, Trust({"10.0.0.0/8"})).key.empty());
  REQUIRE(ResolveClientIp("fe80::1%eth0", {}, TrustedProxies()).key.empty());
}

}  // namespace
}  // namespace sluice
