/**
 * Which IP addresses a URL given by a client may make the gateway connect to: only globally
 * routable unicast. Everything else (loopback, RFC 1918, link-local and cloud metadata, CGNAT,
 * multicast, documentation and reserved blocks, IPv6 unique-local, and IPv6 forms that carry an
 * IPv4 address) would let a client reach the gateway's own network.
 *
 * @since 1.0.0
 */
import ipaddr from "ipaddr.js"

// ipaddr.js names the special-purpose blocks of the IANA registries; whatever it does not call
// ordinary unicast is refused. These blocks are refused as well, whatever name it gives them.
const V4_ALSO_REFUSED = [
  "192.0.0.0/24", // IETF protocol assignments
  "192.0.2.0/24", // TEST-NET-1
  "192.88.99.0/24", // 6to4 relay anycast
  "198.18.0.0/15", // benchmarking
  "198.51.100.0/24", // TEST-NET-2
  "203.0.113.0/24", // TEST-NET-3
  "240.0.0.0/4" // reserved, broadcast 255.255.255.255
].map((cidr) => ipaddr.IPv4.parseCIDR(cidr))

const V6_GLOBAL = ipaddr.IPv6.parseCIDR("2000::/3")
const V6_ALSO_REFUSED = [
  "2001::/23", // IETF protocol assignments, Teredo
  "2001:db8::/32", // documentation
  "3fff::/20" // documentation
].map((cidr) => ipaddr.IPv6.parseCIDR(cidr))

const isPrivateV4 = (v4: ipaddr.IPv4): boolean =>
  v4.range() !== "unicast" || V4_ALSO_REFUSED.some((cidr) => v4.match(cidr))

/** The IPv4 address an IPv6 one reaches through NAT64 (64:ff9b::/96) or 6to4 (2002::/16). */
const embeddedV4 = (v6: ipaddr.IPv6): ipaddr.IPv4 | undefined => {
  const bytes = v6.toByteArray()
  switch (v6.range()) {
    case "ipv4Mapped":
      return v6.toIPv4Address()
    case "rfc6052":
      return new ipaddr.IPv4(bytes.slice(12, 16))
    case "6to4":
      return new ipaddr.IPv4(bytes.slice(2, 6))
    default:
      return undefined
  }
}

/**
 * True when `address` (an IPv4 or IPv6 literal, brackets allowed) must not be connected to on a
 * client's behalf. Text that is not an IP address counts as private: the caller resolves names
 * first, and refusing what it cannot read is the safe answer.
 *
 * @since 1.0.0
 */
export const isPrivate = (address: string): boolean => {
  const ip = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  // Only the standard notations: a dotted quad, or IPv6 (optionally ending in a dotted quad).
  if (!ipaddr.IPv4.isValidFourPartDecimal(ip) && !ipaddr.IPv6.isValid(ip)) return true
  const parsed = ipaddr.parse(ip)
  if (parsed.kind() === "ipv4") return isPrivateV4(parsed as ipaddr.IPv4)
  const v6 = parsed as ipaddr.IPv6
  // IPv6 forms that reach an IPv4 address are judged by that address.
  const v4 = embeddedV4(v6)
  if (v4 !== undefined) return isPrivateV4(v4)
  // Outside 2000::/3 is loopback, unspecified, IPv4-compatible, discard, unique-local (fc00::/7),
  // link-local (fe80::/10), multicast (ff00::/8), NAT64 local-use (64:ff9b:1::/48), or unassigned.
  return !v6.match(V6_GLOBAL) || V6_ALSO_REFUSED.some((cidr) => v6.match(cidr))
}

/**
 * True for `localhost` and its subdomains (RFC 6761), with or without the trailing dot: names
 * that resolve to this machine whatever DNS says.
 *
 * @since 1.0.0
 */
export const isLocalHostname = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}
