/**
 * A linking QR payload as a PNG image (a `data:image/png;base64,...` URL), so an operator or the
 * cabinet can show the QR without rendering it themselves.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import QRCode from "qrcode"

/** Rendered images of the latest payloads: a QR is polled far more often than it changes. */
const recent = new Map<string, string>()
const RECENT_LIMIT = 256

/**
 * The PNG data URL of `payload` (a WhatsApp QR payload is a few hundred characters; a payload
 * too long for any QR code is a defect).
 *
 * @since 1.0.0
 */
export const pngDataUrl = (payload: string): Effect.Effect<string> =>
  Effect.suspend(() => {
    const cached = recent.get(payload)
    if (cached !== undefined) return Effect.succeed(cached)
    return Effect.map(
      Effect.promise(() => QRCode.toDataURL(payload, { type: "image/png", errorCorrectionLevel: "L", margin: 2, scale: 6 })),
      (url) => {
        if (recent.size >= RECENT_LIMIT) recent.delete(recent.keys().next().value!)
        recent.set(payload, url)
        return url
      }
    )
  }).pipe(Effect.withSpan("QrImage.pngDataUrl"))

/**
 * `payload` drawn with block characters, for scanning it straight from a terminal.
 *
 * @since 1.0.0
 */
export const terminalArt = (payload: string): Promise<string> =>
  QRCode.toString(payload, { type: "terminal", small: true, errorCorrectionLevel: "L" })
