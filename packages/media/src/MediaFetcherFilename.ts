/**
 * The name of a fetched file: what the server's `Content-Disposition` says (RFC 6266, with the
 * RFC 8187 `filename*` preferred), else the last segment of the URL's path.
 *
 * @since 1.0.0
 */

/**
 * The file name for a response to `url`, or `null` when neither the header nor the path names one.
 *
 * @since 1.0.0
 */
export const filename = (contentDisposition: string | undefined, url: URL): string | null =>
  clean(fromContentDisposition(contentDisposition ?? "")) ?? clean(fromPath(url.pathname))

/**
 * The `filename*` parameter decoded, else the `filename` parameter.
 *
 * @since 1.0.0
 */
export const fromContentDisposition = (header: string): string | undefined => {
  const params = parameters(header)
  const extended = params.get("filename*")
  return (extended === undefined ? undefined : decodeExtValue(extended)) ?? params.get("filename")
}

// `;`-separated `name=value` pairs after the disposition type; values are tokens or quoted strings.
const PARAM = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g

const parameters = (header: string): Map<string, string> => {
  const params = new Map<string, string>()
  for (const [, name, quoted, token] of header.matchAll(PARAM)) {
    const key = name!.toLowerCase()
    if (!params.has(key)) params.set(key, quoted !== undefined ? quoted.replace(/\\(.)/g, "$1") : token!.trim())
  }
  return params
}

/** `charset'language'percent-encoded` (RFC 8187); UTF-8 and ISO-8859-1 are the charsets defined. */
const decodeExtValue = (value: string): string | undefined => {
  const match = /^([^']*)'[^']*'(.*)$/.exec(value)
  if (match === null) return undefined
  const charset = match[1]!.toLowerCase()
  const bytes: Array<number> = []
  const encoded = match[2]!
  for (let i = 0; i < encoded.length; i++) {
    if (encoded[i] === "%" && /^[0-9a-fA-F]{2}$/.test(encoded.slice(i + 1, i + 3))) {
      bytes.push(parseInt(encoded.slice(i + 1, i + 3), 16))
      i += 2
    } else {
      bytes.push(encoded.charCodeAt(i) & 0xff)
    }
  }
  if (charset === "utf-8") {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes))
    } catch {
      return undefined
    }
  }
  return charset === "iso-8859-1" ? String.fromCharCode(...bytes) : undefined
}

const fromPath = (pathname: string): string | undefined => {
  const last = pathname.slice(pathname.lastIndexOf("/") + 1)
  try {
    return decodeURIComponent(last)
  } catch {
    return last
  }
}

/**
 * Only the last component of whatever path the name carries, without control characters: the
 * name travels on to recipients and into storage, and a server must not choose a directory.
 */
const clean = (name: string | undefined): string | null => {
  if (name === undefined) return null
  const base = name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1).replace(/[\x00-\x1f\x7f]/g, "")
  const trimmed = base.trim()
  return trimmed === "" || trimmed === "." || trimmed === ".." ? null : trimmed
}
