/**
 * Protection against DNS rebinding: a web page whose name an attacker points at the gateway's
 * address must not reach the tool server from a browser. The Host header, and the Origin header
 * when a browser sends one, must name an allowed host.
 */

/** Hosts allowed when none are configured: the gateway reached on this machine. */
export const LOCAL_HOSTS: ReadonlyArray<string> = ["localhost", "127.0.0.1", "[::1]"]

export interface HostRefusal {
  readonly code: "host_not_allowed" | "origin_not_allowed"
  readonly error: string
}

/** The host name of a Host header value, without its port, lower case; IPv6 keeps its brackets. */
export const hostnameOf = (host: string): string => {
  const value = host.trim().toLowerCase()
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1)
  return value.split(":")[0]
}

/**
 * Why the request is refused, or undefined when its Host (and Origin, if any) name an allowed
 * host. `allowed` holds host names (no ports); `*` allows any host.
 */
export const refusal = (
  headers: Readonly<Record<string, string | undefined>>,
  allowed: ReadonlyArray<string>
): HostRefusal | undefined => {
  if (allowed.includes("*")) return undefined
  const isAllowed = (name: string) => allowed.some((a) => hostnameOf(a) === name)
  const host = headers["host"]
  if (host === undefined || !isAllowed(hostnameOf(host))) {
    return {
      code: "host_not_allowed",
      error: `The tool server does not answer for host ${JSON.stringify(host ?? "")}: add it to MCP_ALLOWED_HOSTS`
    }
  }
  const origin = headers["origin"]
  if (origin === undefined) return undefined
  let originHost: string | undefined
  try {
    originHost = hostnameOf(new URL(origin).host)
  } catch {
    originHost = undefined
  }
  return originHost !== undefined && isAllowed(originHost)
    ? undefined
    : {
      code: "origin_not_allowed",
      error: `Requests from origin ${JSON.stringify(origin)} are not allowed: add its host to MCP_ALLOWED_HOSTS`
    }
}
