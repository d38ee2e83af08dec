/**
 * A message as the simulated network holds it once a number handed it over: the file read, its
 * bytes kept only when another number of the gateway is to receive them (the network's copy, as
 * WhatsApp's servers keep one), otherwise only counted.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as SimProtocol from "./SimProtocol.js"
import {
  type DriverUnavailable,
  fileOf,
  type FileStream,
  type OutgoingContent,
  type OutgoingMessage,
  readAll,
  type SendRejected
} from "../WhatsAppDriver.js"

/** A sent file on the network. @since 1.0.0 */
export interface HeldMedia {
  readonly mimeType: string
  readonly size: number
  /** The bytes, when a number of the gateway receives them; null otherwise. */
  readonly bytes: Uint8Array | null
}

type Held<C> = C extends { readonly media: unknown } ? Omit<C, "media"> & { readonly media: HeldMedia } : C

/** @since 1.0.0 */
export type SimContent = Held<OutgoingContent>

/** @since 1.0.0 */
export interface SimOutgoing {
  readonly waMessageId: string
  readonly to: string
  readonly content: SimContent
}

/**
 * Reads the message's file, keeping its bytes when `keep` says so.
 *
 * @since 1.0.0
 */
export const read = (
  message: OutgoingMessage,
  keep: boolean
): Effect.Effect<SimOutgoing, SendRejected | DriverUnavailable> => {
  const content = message.content
  if (content.kind === "text") return Effect.succeed({ ...message, content })
  const media = content.media
  const held: Effect.Effect<HeldMedia, SendRejected | DriverUnavailable> = keep
    ? Effect.map(readAll(media.open), (bytes) => ({ mimeType: media.mimeType, size: bytes.byteLength, bytes }))
    : Effect.map(count(media.open), (size) => ({ mimeType: media.mimeType, size, bytes: null }))
  return Effect.map(held, (m) => ({ ...message, content: { ...content, media: m } as SimContent }))
}

/** The bytes of a file, counted as they are read. */
const count = <E>(open: Effect.Effect<FileStream<E>, E, Scope.Scope>): Effect.Effect<number, E> =>
  Effect.scoped(Effect.flatMap(open, ({ failure, readable }) =>
    Effect.tryPromise({
      try: async () => {
        let size = 0
        for await (const chunk of readable) size += (chunk as Uint8Array).byteLength
        return size
      },
      catch: failure
    })))

type Wire = typeof SimProtocol.Outgoing.Type

/**
 * The message as the standalone simulator's protocol carries it: the file's bytes in the message
 * (the test network's wire takes it whole; the gateway's own path never does).
 *
 * @since 1.0.0
 */
export const toWire = (message: OutgoingMessage): Effect.Effect<Wire, SendRejected | DriverUnavailable> =>
  Effect.map(read(message, true), (held): Wire => {
    const content = held.content
    if (content.kind === "text") return { ...held, content }
    return { ...held, content: { ...content, media: { mimeType: content.media.mimeType, bytes: content.media.bytes! } } }
  })

/** @since 1.0.0 */
export const fromWire = (wire: Wire): OutgoingMessage => {
  const content = wire.content
  if (content.kind === "text") return { ...wire, content }
  const { bytes, mimeType } = content.media
  return { ...wire, content: { ...content, media: { mimeType, size: bytes.byteLength, open: fileOf(bytes) } } }
}
