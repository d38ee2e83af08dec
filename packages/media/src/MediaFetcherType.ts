/**
 * What kind of file a fetched attachment is, and whether WhatsApp takes it as the kind of message
 * the client asked for.
 *
 * @since 1.0.0
 */

/**
 * The attachment kinds of POST /messages/send.
 *
 * @since 1.0.0
 */
export type MediaKind = "image" | "document" | "voice" | "video"

/**
 * The media types each kind accepts (`document` accepts any). `audio/ogg` is a voice note only
 * when its stream is Opus, which {@link check} verifies from the bytes.
 *
 * @since 1.0.0
 */
export const accepted: { readonly [K in MediaKind]: ReadonlyArray<string> | "any" } = {
  image: ["image/jpeg", "image/png", "image/webp"],
  video: ["video/mp4", "video/3gpp"],
  voice: ["audio/ogg", "audio/mpeg", "audio/mp4", "audio/aac", "audio/amr"],
  document: "any"
}

const ALIASES: Readonly<Record<string, string>> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "audio/mp3": "audio/mpeg",
  "audio/x-m4a": "audio/mp4",
  "audio/opus": "audio/ogg"
}

const UNKNOWN = new Set(["", "application/octet-stream", "binary/octet-stream"])

/**
 * The media type of a `Content-Type` header without its parameters, lower-cased, common aliases
 * folded; `undefined` when the header says nothing useful (absent or octet-stream).
 *
 * @since 1.0.0
 */
export const fromHeader = (header: string | undefined): string | undefined => {
  const type = (header ?? "").split(";")[0]!.trim().toLowerCase()
  return UNKNOWN.has(type) ? undefined : ALIASES[type] ?? type
}

const startsWith = (bytes: Uint8Array, prefix: string, offset = 0): boolean =>
  bytes.length >= offset + prefix.length &&
  Array.from(prefix).every((c, i) => bytes[offset + i] === c.charCodeAt(0))

/**
 * The media type told by the file's first bytes, for the types clients send as attachments (and
 * a few they send by mistake, for the refusal's message). An ISO media file (`ftyp`, or a file
 * that starts with a movie box and has none) is a HEIF or AVIF image by its brand, else audio when
 * its brand says so or when a voice note was asked for. An MP3's ID3 tag is skipped when the first
 * frame is within `bytes` (an ID3-tagged AAC stream is AAC).
 *
 * @since 1.0.0
 */
export const sniff = (bytes: Uint8Array, kind: MediaKind): string | undefined => {
  const [b0, b1] = [bytes[0] ?? 0, bytes[1] ?? 0]
  if (b0 === 0xff && b1 === 0xd8 && bytes[2] === 0xff) return "image/jpeg"
  if (startsWith(bytes, "\x89PNG\r\n\x1a\n")) return "image/png"
  if (startsWith(bytes, "RIFF") && startsWith(bytes, "WEBP", 8)) return "image/webp"
  if (startsWith(bytes, "GIF87a") || startsWith(bytes, "GIF89a")) return "image/gif"
  if (startsWith(bytes, "ftyp", 4)) {
    const brand = String.fromCharCode(...bytes.subarray(8, 12))
    if (HEIF_BRANDS.has(brand)) return "image/heif"
    if (brand === "avif" || brand === "avis") return "image/avif"
    if (brand.startsWith("3gp")) return "video/3gpp"
    if (brand.startsWith("3g2")) return "video/3gpp2"
    return brand === "M4A " || kind === "voice" ? "audio/mp4" : "video/mp4"
  }
  if (MOVIE_BOXES.some((box) => startsWith(bytes, box, 4))) return kind === "voice" ? "audio/mp4" : "video/mp4"
  if (startsWith(bytes, "OggS")) return "audio/ogg"
  if (startsWith(bytes, "#!AMR\n")) return "audio/amr"
  if (startsWith(bytes, "ID3") && bytes.length >= 10) {
    const after = id3Length(bytes)
    return frame(bytes[after] ?? 0, bytes[after + 1] ?? 0) ?? "audio/mpeg"
  }
  const audio = frame(b0, b1)
  if (audio !== undefined) return audio
  if (startsWith(bytes, "ADIF")) return "audio/aac"
  if (startsWith(bytes, "%PDF-")) return "application/pdf"
  if (startsWith(bytes, "PK\x03\x04")) return "application/zip"
  return undefined
}

/** Major brands of HEIF images (HEIC among them): what iPhones take photos as. */
const HEIF_BRANDS = new Set(["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"])

/** Top-level boxes an ISO media file without `ftyp` (older QuickTime and MP4 writers) starts with. */
const MOVIE_BOXES = ["moov", "mdat", "wide", "free", "skip"]

/** Bytes an ID3v2 tag takes: its header, its body (a size of four 7-bit bytes), its footer if any. */
const id3Length = (bytes: Uint8Array): number => {
  const size = [6, 7, 8, 9].reduce((n, i) => n << 7 | (bytes[i]! & 0x7f), 0)
  return 10 + size + ((bytes[5]! & 0x10) === 0 ? 0 : 10)
}

/**
 * The audio stream a frame header starts, by its frame sync (eleven set bits): ADTS (AAC) has
 * layer bits 00, MPEG audio layers I-III do not.
 */
const frame = (b0: number, b1: number): string | undefined =>
  b0 === 0xff && (b1 & 0xe0) === 0xe0 ? (b1 & 0x06) === 0 ? "audio/aac" : "audio/mpeg" : undefined

/**
 * True when the bytes start an HTML page (after an optional byte order mark and white space):
 * what a link answers instead of the file when it needs a session or has expired.
 *
 * @since 1.0.0
 */
export const isHtml = (bytes: Uint8Array): boolean => {
  const text = new TextDecoder().decode(bytes.subarray(0, 64)).replace(/^\uFEFF?\s*/, "").toLowerCase()
  return text.startsWith("<!doctype html") || text.startsWith("<html")
}

/**
 * True when an Ogg stream begins with an Opus header (its first packet, right after the first
 * page's segment table).
 *
 * @since 1.0.0
 */
export const isOggOpus = (bytes: Uint8Array): boolean =>
  startsWith(bytes, "OggS") && bytes.length > 26 && startsWith(bytes, "OpusHead", 27 + bytes[26]!)

const NOUNS: { readonly [K in MediaKind]: string } = {
  image: "an image (JPEG, PNG or WebP)",
  video: "a video (MP4 or 3GP)",
  voice: "a voice note (OGG/Opus, MP3, M4A, AAC or AMR)",
  document: "a document"
}

/**
 * The media type to send the file with, or why it does not fit `kind` (a sentence for the
 * client). For an image, a video or a voice note the bytes decide, whatever the header says:
 * every type these kinds take is known by its first bytes, so a file whose bytes are none of them
 * is refused even when the header names one (an error page served as `image/jpeg`). A document
 * takes any type: the header's, else the sniffed one, else `application/octet-stream`.
 *
 * @since 1.0.0
 */
export const check = (
  kind: MediaKind,
  contentType: string | undefined,
  bytes: Uint8Array
): { readonly mimeType: string } | { readonly mismatch: string } => {
  const said = fromHeader(contentType)
  const allowed = accepted[kind]
  if (allowed === "any") return { mimeType: said ?? sniff(bytes, kind) ?? "application/octet-stream" }
  const expected = `Expected ${NOUNS[kind]}`
  const found = sniff(bytes, kind)
  if (found === undefined) {
    const page = isHtml(bytes) ? "an HTML page" : undefined
    return said !== undefined && allowed.includes(said)
      ? { mismatch: `${expected}; the server said ${said}, but the file is ${page ?? "not one"}` }
      : { mismatch: `${expected}, got ${said ?? page ?? "a file of unknown type"}` }
  }
  if (!allowed.includes(found)) {
    return said === undefined || said === found
      ? { mismatch: `${expected}, got ${found}` }
      : { mismatch: `${expected}; the server said ${said}, but the file is ${found}` }
  }
  if (kind === "voice" && found === "audio/ogg" && !isOggOpus(bytes)) {
    return { mismatch: `${expected}, got audio/ogg that is not Opus` }
  }
  return { mimeType: found }
}
