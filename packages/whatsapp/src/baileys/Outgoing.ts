/**
 * A message of the port as Baileys content, and what a failed send means: the network refused
 * the message (it will never go) or the connection could not carry it now (it stays pending).
 *
 * @since 1.0.0
 */
import type { AnyMessageContent } from "@whiskeysockets/baileys"
import type { Readable } from "node:stream"
import * as VoiceNote from "../VoiceNote.js"
import { DriverUnavailable, type OutgoingContent, SendRejected } from "../WhatsAppDriver.js"
import { codeOf } from "./DisconnectPolicy.js"

/**
 * The content Baileys sends; a file goes as `{ stream }` (Baileys encrypts it into a temporary
 * file while it reads, so it is never whole in memory), `file` being the media's stream as a
 * Readable.
 *
 * @since 1.0.0
 */
export const content = (c: OutgoingContent, file: Readable): AnyMessageContent => {
  const upload = { stream: file }
  switch (c.kind) {
    case "text":
      return { text: c.text }
    case "image":
      return { image: upload, mimetype: c.media.mimeType, ...caption(c.caption) }
    case "video":
      return { video: upload, mimetype: c.media.mimeType, ...caption(c.caption) }
    case "document":
      return {
        document: upload,
        mimetype: c.media.mimeType,
        fileName: c.filename,
        ...caption(c.caption)
      }
    case "voice":
      // A voice note (push-to-talk), shown with a waveform, not an audio file; `file` is already
      // the Opus encoding of the media (`VoiceNote.toOpus`).
      return { audio: upload, mimetype: VoiceNote.MIME_TYPE, ptt: true }
  }
}

const caption = (text: string | undefined) => text === undefined || text === "" ? {} : { caption: text }

/** WhatsApp did not answer in time: whether it got the message is unknown. @since 1.0.0 */
export class NoAnswer extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`)
  }
}

/** Codes (Boom status) of a connection that went away under the send. */
const CONNECTION_CODES = new Set([408, 428, 440, 500, 503, 515])

/** @since 1.0.0 */
export const sendFailure = (error: unknown): SendRejected | DriverUnavailable => {
  const message = error instanceof Error ? error.message : String(error)
  const code = codeOf(error)
  // Baileys could not encrypt the message for any of the recipient's devices: this message, not the connection.
  if (code === 500 && /^All encryptions failed/.test(message)) {
    return new SendRejected({ reason: `WhatsApp could not encrypt the message for the recipient: ${message} (500)` })
  }
  if (error instanceof NoAnswer || (code !== undefined && CONNECTION_CODES.has(code)) || /connection (closed|lost|terminated)|timed out/i.test(message)) {
    return new DriverUnavailable({ reason: `the connection dropped during the send: ${message}` })
  }
  return new SendRejected({ reason: code === undefined ? message : `${message} (${code})` })
}
