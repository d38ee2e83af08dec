/**
 * The `Range` header of a download (RFC 9110, section 14): one byte range is honoured; several
 * ranges, other units or a malformed header are answered with the whole file, as the RFC
 * allows; a range that starts past the end is unsatisfiable (416).
 *
 * @since 1.0.0
 */

/** @since 1.0.0 */
export type Requested =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Part"; readonly start: number; readonly end: number }
  | { readonly _tag: "Unsatisfiable" }

const WHOLE: Requested = { _tag: "Whole" }
const SINGLE = /^bytes=(\d*)-(\d*)$/

/**
 * What `header` asks of a file of `size` bytes.
 *
 * @since 1.0.0
 */
export const parse = (header: string | undefined, size: number): Requested => {
  if (header === undefined) return WHOLE
  const match = SINGLE.exec(header.trim().replace(/\s+/g, ""))
  if (match === null) return WHOLE
  const [, first, last] = match
  if (first === "" && last === "") return WHOLE
  if (first === "") {
    // A suffix: the last N bytes.
    const length = Number(last)
    if (length === 0) return { _tag: "Unsatisfiable" }
    return size === 0 ? { _tag: "Unsatisfiable" } : { _tag: "Part", start: Math.max(0, size - length), end: size - 1 }
  }
  const start = Number(first)
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1)
  if (last !== "" && Number(last) < start) return WHOLE
  if (start >= size) return { _tag: "Unsatisfiable" }
  return { _tag: "Part", start, end }
}
