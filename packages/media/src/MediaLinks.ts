/**
 * How a message's file is handed out by GET /media/{id}: links live 15 minutes; images, video,
 * audio and PDF open in the browser, everything else (and anything asked with `download=1`)
 * downloads under its original name, or a name made from its kind and message id.
 *
 * @since 1.0.0
 */
import type { Disposition } from "./ContentDisposition.js"

/** @since 1.0.0 */
export const LINK_SECONDS = 15 * 60

/** @since 1.0.0 */
export const viewable = (mimeType: string): boolean =>
  /^(image|video|audio)\//i.test(mimeType) || /^application\/pdf$/i.test(mimeType)

const EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/webp": "webp",
  "image/gif": "gif",
  "video/mp4": "mp4",
  "video/3gpp": "3gp",
  "audio/ogg": "ogg",
  "audio/mpeg": "mp3",
  "audio/mp4": "m4a",
  "application/pdf": "pdf"
}

/** @since 1.0.0 */
export const presentation = (
  file: { readonly messageId: number; readonly kind: string; readonly mimeType: string; readonly filename: string | null },
  download: boolean
): { readonly disposition: Disposition; readonly filename: string; readonly contentType: string } => {
  const extension = EXTENSIONS[file.mimeType.toLowerCase()]
  const filename = file.filename !== null && file.filename !== ""
    ? file.filename
    : `${file.kind}-${file.messageId}${extension === undefined ? "" : `.${extension}`}`
  return {
    disposition: download || !viewable(file.mimeType) ? "attachment" : "inline",
    filename,
    contentType: file.mimeType
  }
}
