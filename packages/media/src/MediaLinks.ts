/**
 * How a message's file is handed out by GET /media/{id}: links live 15 minutes; images, video,
 * audio and PDF of the types a browser shows without running anything of the file's open in the
 * browser, everything else (and anything asked with `download=1`) downloads under its original
 * name, or a name made from its kind, message id and the type's extension.
 *
 * @since 1.0.0
 */
import type { Disposition } from "./ContentDisposition.js"
import * as MediaFetcherType from "./MediaFetcherType.js"

/** @since 1.0.0 */
export const LINK_SECONDS = 15 * 60

/**
 * The types served inline, with their extensions: a browser shows them as media (PDF in its
 * sandboxed viewer), never as a page. Any other type may be one that runs script when opened
 * (SVG, HTML, XML...): on S3 the file is served from the bucket without the gateway's `nosniff`
 * and sandboxing CSP, so such a file is only ever a download, and under a neutral type.
 */
const VIEWABLE: Readonly<Record<string, string>> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/webp": "webp",
  "image/gif": "gif",
  "image/avif": "avif",
  "image/heic": "heic",
  "image/heif": "heif",
  "image/bmp": "bmp",
  "video/mp4": "mp4",
  "video/3gpp": "3gp",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "audio/ogg": "ogg",
  "audio/mpeg": "mp3",
  "audio/mp4": "m4a",
  "audio/aac": "aac",
  "audio/amr": "amr",
  "audio/wav": "wav",
  "audio/webm": "weba",
  "application/pdf": "pdf"
}

/** Extensions of the other common types, for the name made for a file that has none. */
const EXTENSIONS: Readonly<Record<string, string>> = {
  ...VIEWABLE,
  "image/svg+xml": "svg",
  "image/tiff": "tiff",
  "text/html": "html",
  "application/xhtml+xml": "xhtml",
  "text/xml": "xml",
  "application/xml": "xml",
  "text/plain": "txt",
  "text/csv": "csv",
  "text/vcard": "vcf",
  "text/x-vcard": "vcf",
  "application/json": "json",
  "application/rtf": "rtf",
  "application/zip": "zip",
  "application/vnd.rar": "rar",
  "application/x-rar-compressed": "rar",
  "application/x-7z-compressed": "7z",
  "application/msword": "doc",
  "application/vnd.ms-excel": "xls",
  "application/vnd.ms-powerpoint": "ppt",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "application/vnd.android.package-archive": "apk"
}

/** The type every file that is not {@link viewable} is served as. @since 1.0.0 */
export const NEUTRAL_TYPE = "application/octet-stream"

/** The type without its parameters, lower-cased, common aliases folded ("" when unknown). */
const essence = (mimeType: string): string => MediaFetcherType.fromHeader(mimeType) ?? ""

/** @since 1.0.0 */
export const viewable = (mimeType: string): boolean => Object.hasOwn(VIEWABLE, essence(mimeType))

/** @since 1.0.0 */
export const presentation = (
  file: { readonly messageId: number; readonly kind: string; readonly mimeType: string; readonly filename: string | null },
  download: boolean
): { readonly disposition: Disposition; readonly filename: string; readonly contentType: string } => {
  const type = essence(file.mimeType)
  const extension = Object.hasOwn(EXTENSIONS, type) ? EXTENSIONS[type] : undefined
  const filename = file.filename !== null && file.filename !== ""
    ? file.filename
    : `${file.kind}-${file.messageId}${extension === undefined ? "" : `.${extension}`}`
  const safe = viewable(file.mimeType)
  return {
    disposition: download || !safe ? "attachment" : "inline",
    filename,
    contentType: safe ? file.mimeType : NEUTRAL_TYPE
  }
}
