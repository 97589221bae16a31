// Fuzzes the client-address parsers (server/client_ip.h): CIDR blocks, addresses and the
// forwarding headers. Input: line 1 the socket peer, line 2 the trusted blocks
// (space-separated), line 3 "f" for RFC 7239 Forwarded (else X-Forwarded-For), each
// further line one header value. Properties: no crash or sanitizer report; a block that
// parses contains its own network and nothing outside it of the other family; an
// untrusted (or no) peer is the client whatever the headers say; a client address
// parses back to itself and has a key; the walk reads only hops the header holds.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "server/client_ip.h"
#include "tests/fuzz/fuzz_check.h"

namespace sluice {
namespace {

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    lines.emplace_back(text.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::vector<std::string> lines = Lines(fuzz::AsText(data, size));
  const std::string peer = lines.empty() ? "" : lines[0];
  std::vector<Cidr> blocks;
  if (lines.size() > 1) {
    std::istringstream in(lines[1]);
    std::string word;
    while (in >> word) {
      auto cidr = ParseCidr(word);
      if (!cidr) continue;
      FUZZ_CHECK(cidr->prefix >= 0 && cidr->prefix <= (cidr->network.is_v4() ? 32 : 128));
      TrustedProxies one({*cidr}, ForwardedHeader::kXForwardedFor);
      FUZZ_CHECK(one.Contains(cidr->network));
      blocks.push_back(*cidr);
    }
  }
  const ForwardedHeader header = lines.size() > 2 && lines[2] == "f"
                                     ? ForwardedHeader::kForwarded
                                     : ForwardedHeader::kXForwardedFor;
  std::vector<std::string_view> values;
  size_t commas = 0;
  for (size_t i = 3; i < lines.size(); ++i) {
    values.emplace_back(lines[i]);
    for (char c : lines[i]) commas += c == ',' ? 1 : 0;
    FUZZ_CHECK(ForwardedHops(lines[i], header).size() <= 1 + commas);
  }
  const TrustedProxies proxies(blocks, header);
  const ClientIp c = ResolveClientIp(peer, values, proxies);
  const auto peer_address = ParseAddress(peer);
  if (!peer_address) {
    FUZZ_CHECK(c.address.empty() && c.key.empty() && !c.forwarded);
    return 0;
  }
  FUZZ_CHECK(!c.address.empty() && !c.key.empty());
  auto back = ParseAddress(c.address);
  FUZZ_CHECK(back.has_value());
  FUZZ_CHECK(back->to_string() == c.address);
  if (!proxies.Contains(*peer_address)) {
    FUZZ_CHECK(c.address == peer_address->to_string());
    FUZZ_CHECK(!c.forwarded);
  }
  if (!c.forwarded) FUZZ_CHECK(c.address == peer_address->to_string());
  return 0;
}
