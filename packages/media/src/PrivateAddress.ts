/**
 * Which IP addresses a URL given by a client may make the gateway connect to: only globally
 * routable unicast. Everything else (loopback, RFC 1918, link-local and cloud metadata, CGNAT,
 * multicast, documentation and reserved blocks, IPv6 unique-local, and IPv6 forms that carry an
 * IPv4 address) would let a client reach the gateway's own network.
 *
 * @since 1.0.0
 */
import { isIPv4, isIPv6 } from "node:net"

type Cidr = readonly [base: bigint, prefix: number]

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved 240/4.
const V4_REFUSED: ReadonlyArray<Cidr> = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata 169.254.169.254
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, broadcast 255.255.255.255
].map(([ip, prefix]) => [parseV4(ip as string), prefix as number] as const)

// Inside the global unicast block 2000::/3, the parts that are not ordinary hosts.
const V6_REFUSED: ReadonlyArray<Cidr> = [
  ["2001::", 23], // IETF protocol assignments, Teredo
  ["2001:db8::", 32], // documentation
  ["3fff::", 20] // documentation
].map(([ip, prefix]) => [parseV6(ip as string)!, prefix as number] as const)

const V6_GLOBAL: Cidr = [parseV6("2000::")!, 3]
const V4_MAPPED: Cidr = [parseV6("::ffff:0:0")!, 96]
const NAT64: Cidr = [parseV6("64:ff9b::")!, 96]
const SIX_TO_FOUR: Cidr = [parseV6("2002::")!, 16]

/**
 * True when `address` (an IPv4 or IPv6 literal, brackets allowed) must not be connected to on a
 * client's behalf. Text that is not an IP address counts as private: the caller resolves names
 * first, and refusing what it cannot read is the safe answer.
 *
 * @since 1.0.0
 */
export const isPrivate = (address: string): boolean => {
  const ip = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  if (isIPv4(ip)) return isPrivateV4(parseV4(ip))
  const v6 = isIPv6(ip) ? parseV6(ip) : undefined
  if (v6 === undefined) return true
  // IPv6 forms that reach an IPv4 address are judged by that address.
  if (within(v6, V4_MAPPED, 128) || within(v6, NAT64, 128)) return isPrivateV4(v6 & 0xffffffffn)
  if (within(v6, SIX_TO_FOUR, 128)) return isPrivateV4((v6 >> 80n) & 0xffffffffn)
  // Outside 2000::/3 is loopback, unspecified, IPv4-compatible, discard, unique-local (fc00::/7),
  // link-local (fe80::/10), multicast (ff00::/8), NAT64 local-use (64:ff9b:1::/48), or unassigned.
  return !within(v6, V6_GLOBAL, 128) || V6_REFUSED.some((cidr) => within(v6, cidr, 128))
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

const isPrivateV4 = (v4: bigint): boolean => V4_REFUSED.some((cidr) => within(v4, cidr, 32))

const within = (ip: bigint, [base, prefix]: Cidr, bits: number): boolean => {
  const shift = BigInt(bits - prefix)
  return ip >> shift === base >> shift
}

function parseV4(ip: string): bigint {
  return ip.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n)
}

/** The 128-bit value of an IPv6 literal (one `net.isIPv6` accepts), zone id ignored. */
function parseV6(ip: string): bigint | undefined {
  let text = ip.split("%")[0]!
  const lastColon = text.lastIndexOf(":")
  const dotted = text.slice(lastColon + 1)
  if (dotted.includes(".")) {
    if (!isIPv4(dotted)) return undefined
    const v4 = parseV4(dotted)
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`
  }
  const halves = text.split("::")
  if (halves.length > 2) return undefined
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const left = groups(halves[0]!)
  const right = halves.length === 2 ? groups(halves[1]!) : []
  const zeros = 8 - left.length - right.length
  if (halves.length === 2 ? zeros < 1 : zeros !== 0) return undefined
  if ([...left, ...right].some((g) => !(g >= 0 && g <= 0xffff))) return undefined
  return [...left, ...Array<number>(zeros).fill(0), ...right].reduce((acc, g) => (acc << 16n) | BigInt(g), 0n)
}
