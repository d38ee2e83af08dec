/**
 * The `Content-Disposition` header (RFC 6266), used for links served by the gateway and for the
 * `response-content-disposition` of presigned S3 links alike.
 *
 * @since 1.0.0
 */

/** @since 1.0.0 */
export type Disposition = "inline" | "attachment"

/**
 * `inline` or `attachment`, with the file name when there is one. A name that is not plain
 * printable ASCII gets an ASCII stand-in in `filename` (old clients) and the exact name in
 * `filename*=UTF-8''...` (RFC 8187), which every current browser prefers.
 *
 * @since 1.0.0
 */
export const format = (disposition: Disposition, filename?: string | undefined): string => {
  if (filename === undefined || filename === "") return disposition
  const fallback = asciiFallback(filename)
  return fallback === filename
    ? `${disposition}; filename="${fallback}"`
    : `${disposition}; filename="${fallback}"; filename*=UTF-8''${encodeExtValue(filename)}`
}

/**
 * The name with everything a quoted-string cannot carry safely (non-ASCII, controls, quotes,
 * backslashes, path separators) replaced by `_`.
 *
 * @since 1.0.0
 */
export const asciiFallback = (filename: string): string =>
  // Whole code points, so one emoji becomes one `_` rather than two.
  Array.from(filename, (c) => (/^[\x20-\x7e]$/.test(c) && !/["\\/%]/.test(c) ? c : "_")).join("")

/**
 * RFC 8187 `value-chars`: UTF-8 percent-encoded, leaving only `attr-char` bare.
 * `encodeURIComponent` also leaves `'()*!` bare; the first four are not attr-chars.
 *
 * @since 1.0.0
 */
export const encodeExtValue = (value: string): string =>
  // A lone surrogate would make encodeURIComponent throw; it becomes U+FFFD as in any UTF-8 encoder.
  encodeURIComponent(value.replace(LONE_SURROGATE, "\uFFFD"))
    .replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
