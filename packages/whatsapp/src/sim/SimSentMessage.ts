/**
 * What the simulated network received from the gateway's numbers: one entry per accepted
 * message, for tests and demos to inspect (the bytes of files are summarised, not kept).
 *
 * @since 1.0.0
 */
import type { Ack, OutgoingContent } from "../WhatsAppDriver.js"
import type { SimOutgoing } from "./SimOutgoing.js"

/** @since 1.0.0 */
export interface SimSentMessage {
  readonly waMessageId: string
  /** Sending number's phone. */
  readonly from: string
  /** Recipient phone. */
  readonly to: string
  readonly kind: OutgoingContent["kind"]
  /** The text of a text message; null for files. */
  readonly text: string | null
  /** The caption of an image, video or document; null when there is none. */
  readonly caption: string | null
  readonly filename: string | null
  /** Size of the file in bytes; null for text. */
  readonly mediaSize: number | null
  readonly mimeType: string | null
  /** When the network accepted it, epoch milliseconds. */
  readonly timestamp: number
  /** How far it got: sent, delivered, read, or failed. */
  readonly ack: Ack
}

/**
 * The log entry of a message the network accepted at `timestamp`.
 *
 * @since 1.0.0
 */
export const fromOutgoing = (from: string, message: SimOutgoing, timestamp: number): SimSentMessage => {
  const content = message.content
  const media = content.kind === "text" ? null : content.media
  return {
    waMessageId: message.waMessageId,
    from,
    to: message.to,
    kind: content.kind,
    text: content.kind === "text" ? content.text : null,
    caption: "caption" in content && content.caption !== undefined ? content.caption : null,
    filename: content.kind === "document" ? content.filename : null,
    mediaSize: media === null ? null : media.size,
    mimeType: media === null ? null : media.mimeType,
    timestamp,
    ack: "sent"
  }
}
