/**
 * Messages arriving at the gateway's numbers in the simulator: written by a peer (on demand or
 * as an automatic reply), or sent by another number of the same gateway.
 *
 * @since 1.0.0
 */
import type { MessageType } from "@wagate/domain/Message"
import * as Effect from "effect/Effect"
import * as Http from "node:http"
import * as Https from "node:https"
import {
  DriverUnavailable as DriverUnavailableError,
  type DriverUnavailable,
  fileOf,
  type IncomingMedia,
  type IncomingMessage
} from "../WhatsAppDriver.js"
import type { SimOutgoing } from "./SimOutgoing.js"

/**
 * A message a peer writes to one of the gateway's numbers.
 *
 * @since 1.0.0
 */
export interface InboundMessage {
  /** The gateway's number (phone) that receives it. */
  readonly to: string
  /** The peer's phone; inside a group, the author. */
  readonly from: string
  /** The peer's display name. */
  readonly name?: string | null | undefined
  readonly text: string
  /** Defaults to "text". */
  readonly type?: MessageType | undefined
  /** Written in a group: its id (digits, with or without `@g.us`) and subject. */
  readonly group?: { readonly id: string; readonly subject?: string | null | undefined } | undefined
  /** Written on the number's own phone to `from`, rather than by `from` (source `phone`). */
  readonly fromMe?: boolean | undefined
  /** An attached file, downloadable by the gateway: its bytes, or how a download of it starts. */
  readonly media?: {
    readonly mimeType: string
    readonly filename?: string | null | undefined
    readonly bytes: Uint8Array
  } | {
    readonly mimeType: string
    readonly filename?: string | null | undefined
    readonly download: IncomingMedia["download"]
    /** Announced with the message; null or absent: not announced. */
    readonly size?: number | null | undefined
  } | undefined
}

/**
 * The network's form of a peer's message, under the id the network gave it.
 *
 * @since 1.0.0
 */
export const fromPeer = (input: InboundMessage, waMessageId: string, timestamp: number): IncomingMessage => {
  const groupId = input.group === undefined ? null : input.group.id.replace(/@g\.us$/, "")
  return {
    waMessageId,
    fromMe: input.fromMe ?? false,
    chatId: groupId === null ? `${input.from}@c.us` : `${groupId}@g.us`,
    peer: groupId ?? input.from,
    peerLid: null,
    name: input.name ?? null,
    isGroup: groupId !== null,
    groupSubject: input.group?.subject ?? null,
    author: groupId === null ? null : input.from,
    type: input.type ?? "text",
    text: input.text,
    timestamp,
    media: input.media === undefined ? null : {
      mimeType: input.media.mimeType,
      filename: input.media.filename ?? null,
      ...("bytes" in input.media
        ? { size: input.media.bytes.byteLength, download: fileOf(input.media.bytes) }
        : { size: input.media.size ?? null, download: input.media.download })
    }
  }
}

/**
 * A message of one gateway number as another gateway number receives it. It keeps the
 * sender's message id, as WhatsApp does on both ends.
 *
 * @since 1.0.0
 */
export const fromNumber = (from: string, message: SimOutgoing, timestamp: number): IncomingMessage => {
  const content = message.content
  const media = content.kind === "text" ? null : content.media
  return {
    waMessageId: message.waMessageId,
    fromMe: false,
    chatId: `${from}@c.us`,
    peer: from,
    peerLid: null,
    name: null,
    isGroup: false,
    groupSubject: null,
    author: null,
    type: content.kind,
    text: content.kind === "text" ? content.text : ("caption" in content ? content.caption ?? "" : ""),
    timestamp,
    media: media === null ? null : {
      mimeType: media.mimeType,
      filename: content.kind === "document" ? content.filename : null,
      size: media.size,
      download: fileOf(media.bytes ?? new Uint8Array())
    }
  }
}

const failure = (cause: unknown) =>
  new DriverUnavailableError({ reason: `the simulated media server failed: ${cause instanceof Error ? cause.message : String(cause)}` })

/**
 * A file served at `url`, as WhatsApp's media servers serve the files of messages: each download
 * fetches it again and streams it (the control API's `media.url`, so a benchmark can send large
 * files without the simulator holding them).
 *
 * @since 1.0.0
 */
export const downloadFrom = (url: string): IncomingMedia["download"] =>
  Effect.map(
    Effect.acquireRelease(
      Effect.async<Http.IncomingMessage, DriverUnavailable>((resume, signal) => {
        const get = url.startsWith("https:") ? Https.get : Http.get
        get(url, { signal }, (response) => {
          if (response.statusCode === 200) return resume(Effect.succeed(response))
          response.resume()
          resume(Effect.fail(failure(`it answered HTTP ${response.statusCode}`)))
        }).once("error", (error) => resume(Effect.fail(failure(error))))
      }),
      (response) => Effect.sync(() => response.destroy())
    ),
    (readable) => ({ readable, failure })
  )
