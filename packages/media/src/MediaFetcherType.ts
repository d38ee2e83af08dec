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
 * The media type told by the file's first bytes, for the types clients send as attachments.
 * An ISO media file (`ftyp`) is audio when its brand says so or when a voice note was asked for.
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
    if (startsWith(bytes, "3gp", 8)) return "video/3gpp"
    return startsWith(bytes, "M4A ", 8) || kind === "voice" ? "audio/mp4" : "video/mp4"
  }
  if (startsWith(bytes, "OggS")) return "audio/ogg"
  if (startsWith(bytes, "#!AMR\n")) return "audio/amr"
  if (startsWith(bytes, "ID3")) return "audio/mpeg"
  // Frame sync: eleven set bits. ADTS (AAC) has layer bits 00, MPEG audio layers I-III do not.
  if (b0 === 0xff && (b1 & 0xe0) === 0xe0) return (b1 & 0x06) === 0 ? "audio/aac" : "audio/mpeg"
  if (startsWith(bytes, "%PDF-")) return "application/pdf"
  if (startsWith(bytes, "PK\x03\x04")) return "application/zip"
  return undefined
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
 * client): the header's type, or the sniffed one when the header has none.
 *
 * @since 1.0.0
 */
export const check = (
  kind: MediaKind,
  contentType: string | undefined,
  bytes: Uint8Array
): { readonly mimeType: string } | { readonly mismatch: string } => {
  const type = fromHeader(contentType) ?? sniff(bytes, kind)
  const allowed = accepted[kind]
  if (allowed === "any") return { mimeType: type ?? "application/octet-stream" }
  if (type === undefined) return { mismatch: `Expected ${NOUNS[kind]}, got a file of unknown type` }
  if (!allowed.includes(type)) return { mismatch: `Expected ${NOUNS[kind]}, got ${type}` }
  if (kind === "voice" && type === "audio/ogg" && !isOggOpus(bytes)) {
    return { mismatch: `Expected ${NOUNS[kind]}, got audio/ogg that is not Opus` }
  }
  return { mimeType: type }
}
