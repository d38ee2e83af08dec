/**
 * The one boundary to the WhatsApp network. A number's entity opens the number's session for its
 * own scope and receives the session's events in order; everything above this port is the same
 * whether the network is real (Baileys) or simulated.
 *
 * @since 1.0.0
 */
import type { ConnectionStatus } from "@wagate/domain/Connection"
import type { MessageType } from "@wagate/domain/Message"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Readable } from "node:stream"

/**
 * A file's bytes in a Node stream, read once. The one who reads it pipes it on as it is, without
 * an Effect for every chunk (docs/storage.md, "Memory while files move"). When the stream fails,
 * `failure` says why.
 *
 * @since 1.0.0
 */
export interface FileStream<E> {
  readonly readable: Readable
  readonly failure: (cause: unknown) => E
}

/**
 * A file to send, already fetched, checked and stored, never whole in memory.
 *
 * @since 1.0.0
 */
export interface OutgoingMedia {
  /**
   * Opens the stored file; each run reads it again (a repeated hand-over does). Fails, or later
   * the stream, with `SendRejected` when the file is gone, `DriverUnavailable` when it cannot be
   * read now. The stream is destroyed when the scope closes.
   */
  readonly open: Effect.Effect<FileStream<SendRejected | DriverUnavailable>, SendRejected | DriverUnavailable, Scope.Scope>
  /** Bytes in the file. */
  readonly size: number
  readonly mimeType: string
}

/** @since 1.0.0 */
export type OutgoingContent =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "image"; readonly media: OutgoingMedia; readonly caption?: string | undefined }
  | {
    readonly kind: "document"
    readonly media: OutgoingMedia
    readonly filename: string
    readonly caption?: string | undefined
  }
  | { readonly kind: "voice"; readonly media: OutgoingMedia }
  | { readonly kind: "video"; readonly media: OutgoingMedia; readonly caption?: string | undefined }

/** @since 1.0.0 */
export interface OutgoingMessage {
  /** Chosen by the gateway before sending, so a message recorded before a crash is re-sent under the same id. */
  readonly waMessageId: string
  /** Recipient phone, digits; or `<lid>@lid` for a person the network names only by a LID. */
  readonly to: string
  readonly content: OutgoingContent
  /**
   * The number has not talked with this person before: a driver whose network takes a message
   * for a phone without an account (and says nothing) asks the network first, and fails the
   * message with an Ack when the phone has none.
   */
  readonly firstContact?: boolean | undefined
}

/** Delivery states reported by the network. @since 1.0.0 */
export type Ack = "sent" | "delivered" | "read" | "failed"

/**
 * A download under way: the file's bytes as they arrive from the network.
 *
 * @since 1.0.0
 */
export type MediaDownload = FileStream<DriverUnavailable>

/**
 * `bytes` in hand, opened as a file stream: for what holds a file whole (the simulated network)
 * and for tests.
 *
 * @since 1.0.0
 */
export const fileOf = (bytes: Uint8Array): Effect.Effect<FileStream<DriverUnavailable>, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => Readable.from(bytes.byteLength === 0 ? [] : [Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)])),
      (readable) => Effect.sync(() => readable.destroy())
    ),
    (readable) => ({
      readable,
      failure: (cause: unknown) => new DriverUnavailable({ reason: `the file could not be read: ${String(cause)}` })
    })
  )

/**
 * The whole file, in memory: for what must carry it as bytes (the simulator's protocol between
 * processes, the simulated network's copy of a sent file) and for tests. A store pipes the stream
 * instead.
 *
 * @since 1.0.0
 */
export const readAll = <E>(open: Effect.Effect<FileStream<E>, E, Scope.Scope>): Effect.Effect<Uint8Array, E> =>
  Effect.scoped(Effect.flatMap(open, ({ failure, readable }) =>
    Effect.tryPromise({
      try: async () => {
        const chunks: Array<Buffer> = []
        for await (const chunk of readable) chunks.push(Buffer.from(chunk as Uint8Array))
        return new Uint8Array(Buffer.concat(chunks))
      },
      catch: failure
    })))

/** A file attached to an incoming message; fetched only when wanted. @since 1.0.0 */
export interface IncomingMedia {
  readonly mimeType: string
  readonly filename: string | null
  /** As announced by the network; the download may differ. */
  readonly size: number | null
  /**
   * Starts downloading the file; each run downloads it again. Fails when the download cannot
   * start; the stream is destroyed when the scope closes, whether it was read to its end or not.
   */
  readonly download: Effect.Effect<MediaDownload, DriverUnavailable, Scope.Scope>
}

/** @since 1.0.0 */
export interface IncomingMessage {
  readonly waMessageId: string
  /** Written by the account's own phone (source `phone`), not by the counterpart. */
  readonly fromMe: boolean
  /**
   * `<phone>@c.us` for one-to-one chats, `<id>@g.us` for groups, `<lid>@lid` for a person whose
   * phone is not known (only its LID): replies to that address reach the person.
   */
  readonly chatId: string
  /** Counterpart phone, digits (for a group: the group id); "" when only the person's LID is known. */
  readonly peer: string
  readonly peerLid: string | null
  readonly name: string | null
  readonly isGroup: boolean
  readonly groupSubject: string | null
  /** Author phone inside a group (`<lid>@lid` when only the member's LID is known). */
  readonly author: string | null
  readonly type: MessageType
  readonly text: string
  /** When the message was sent, epoch milliseconds. */
  readonly timestamp: number
  readonly media: IncomingMedia | null
}

/** @since 1.0.0 */
export type DriverEvent =
  | {
    readonly _tag: "Connection"
    readonly status: ConnectionStatus
    /** Current QR payload while status is SCAN_QR_CODE and linking by QR. */
    readonly qr?: string | undefined
    /** Current 8-character pairing code while linking by code. */
    readonly pairingCode?: string | undefined
    /** Why the connection ended or failed, for people and the session.status event. */
    readonly reason?: string | undefined
    /**
     * While STOPPED: the driver connects once more by itself at this time (epoch ms), in case the
     * end was not meant (a first logout from the phone); the session must stay open until then.
     */
    readonly retryAt?: number | undefined
  }
  | { readonly _tag: "Incoming"; readonly message: IncomingMessage }
  | { readonly _tag: "Ack"; readonly waMessageId: string; readonly ack: Ack; readonly error?: string | undefined }
  /**
   * The network restricted the account (a reach-out time lock): until `until` (epoch ms, null
   * when unknown) it refuses messages to people the number has not talked with.
   */
  | { readonly _tag: "Restricted"; readonly reason: string; readonly until: number | null }
  /** The network lifted the restriction. */
  | { readonly _tag: "Unrestricted" }
  /**
   * The network revealed which phone these LIDs (`<lid>@lid`) are: a person seen before only by
   * its LID is the phone's, and the two chats are one.
   */
  | { readonly _tag: "LidMapped"; readonly pairs: ReadonlyArray<{ readonly lid: string; readonly phone: string }> }
  /**
   * The network knows the phone `asked` (digits a message was sent to) as `phone`, where the
   * message went (Brazil's ninth mobile digit, Mexico's 521/52): the person's replies come from
   * `phone`, so the conversation is that phone's.
   */
  | { readonly _tag: "PhoneMapped"; readonly asked: string; readonly phone: string }

/** The network refused the message (it will not be delivered). @since 1.0.0 */
export class SendRejected extends Data.TaggedError("SendRejected")<{ readonly reason: string }> {}

/** The session cannot do this now (not connected, network down, timed out). @since 1.0.0 */
export class DriverUnavailable extends Data.TaggedError("DriverUnavailable")<{ readonly reason: string }> {}

/**
 * The network will not link the number at all (an account it refused or banned): no link begins,
 * and the number's state, reported before this failure, says why. @since 1.0.0
 */
export class LinkRefused extends Data.TaggedError("LinkRefused")<{ readonly reason: string }> {}

/** How a number is linked as a device. @since 1.0.0 */
export type LinkMethod = { readonly kind: "qr" } | { readonly kind: "code" }

/** A number's live session. @since 1.0.0 */
export interface Session {
  /**
   * Starts linking the number; QR refreshes or the pairing code arrive as Connection events.
   * `LinkRefused`: nothing starts, and the Connection event saying why came first.
   */
  readonly link: (method: LinkMethod) => Effect.Effect<void, DriverUnavailable | LinkRefused>
  /**
   * Hands a message to the network; succeeds when the network accepted it, and after the
   * `PhoneMapped` it learned on the way (if any) was handled.
   */
  readonly send: (message: OutgoingMessage) => Effect.Effect<void, SendRejected | DriverUnavailable>
  /** Whether a phone has an account on the network. */
  readonly exists: (phone: string) => Effect.Effect<{ readonly exists: boolean; readonly chatId: string }, DriverUnavailable>
  /** Unlinks the device; the number goes to STOPPED. */
  readonly logout: Effect.Effect<void>
}

/** @since 1.0.0 */
export interface WhatsAppDriverService {
  readonly name: "simulator" | "baileys"
  /**
   * Opens the number's session for the scope: it connects if the number was linked before, and
   * otherwise reports `none` until `link` is called. Events reach `onEvent` one at a time, in
   * the order the network produced them; the session waits for each to be handled.
   */
  readonly open: (
    /** `linked`: the gateway linked this number before; a real driver also knows from its auth state. */
    number: { readonly id: number; readonly phone: string; readonly linked: boolean },
    onEvent: (event: DriverEvent) => Effect.Effect<void>
  ) => Effect.Effect<Session, never, Scope.Scope>
}

/** @since 1.0.0 */
export class WhatsAppDriver extends Context.Tag("@wagate/whatsapp/WhatsAppDriver")<
  WhatsAppDriver,
  WhatsAppDriverService
>() {}
