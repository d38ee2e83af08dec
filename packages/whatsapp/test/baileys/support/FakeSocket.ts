/**
 * A stand-in for Baileys' socket that emits Baileys' own event shapes (`connection.update` with
 * a Boom in `lastDisconnect`, `creds.update`, `messages.upsert`, `messages.update`,
 * `message-receipt.update`...) and wire frames (`CB:ack,class:message`, `CB:iq,type:error`)
 * when the test says so, and records what the driver asks of it. The close errors are built
 * the way Baileys 7.0.0-rc14 builds them (see `Closes` below: message, status code, `data`).
 */
import { Boom } from "@hapi/boom"
import {
  type AnyMessageContent,
  type AuthenticationCreds,
  type BaileysEventMap,
  type BinaryNode,
  extractMessageContent,
  getContentType,
  type GroupMetadata,
  type MiscMessageGenerationOptions,
  proto,
  type WAMessage
} from "@whiskeysockets/baileys"
import * as Layer from "effect/Layer"
import { EventEmitter } from "node:events"
import { Readable } from "node:stream"
import {
  type BaileysSocket,
  type LatestVersion,
  type ReachoutTimelock,
  SocketFactory,
  type SocketOptions,
  type SocketWire
} from "../../../src/baileys/BaileysSocket.js"

/**
 * Close errors as rc14 makes them (`lib/Socket/socket.js`, `lib/Utils/generics.js`).
 */
export const Closes = {
  /** `ws` error mapped by `mapWebSocketError`: `data` is the system error, status 408 (`getCodeFromWSError`). */
  network: (code = "ENOTFOUND", message = `getaddrinfo ${code} web.whatsapp.com`) => {
    const error = Object.assign(new Error(message), { code, errno: -3008, syscall: "getaddrinfo", hostname: "web.whatsapp.com" })
    return new Boom(`WebSocket Error (${message})`, { statusCode: 408, data: error })
  },
  /** `promiseTimeout` (handshake, `connectTimeoutMs`). */
  timedOut: () => new Boom("Timed Out", { statusCode: 408, data: { stack: "Error\n    at promiseTimeout" } }),
  /** The keep-alive found no answer for too long. */
  keepAliveLost: () => new Boom("Connection was lost", { statusCode: 408 }),
  /** The QR refs (or the pairing code's time) ran out. */
  qrRefsEnded: () => new Boom("QR refs attempts ended", { statusCode: 408 }),
  /** The WebSocket closed. */
  terminated: () => new Boom("Connection Terminated", { statusCode: 428 }),
  /** `<stream:error code="515">`: restart required. */
  restartRequired: () =>
    new Boom("Stream Errored (restart required)", { statusCode: 515, data: { tag: "stream:error", attrs: { code: "515" } } }),
  /** `<stream:error><conflict type="replaced"/></stream:error>`. */
  replaced: () =>
    new Boom("Stream Errored (conflict)", { statusCode: 440, data: { tag: "conflict", attrs: { type: "replaced" } } }),
  /** `<failure reason="..." .../>`: `data` is the node's attributes. */
  failure: (reason: number, attrs: Record<string, string> = {}) =>
    new Boom("Connection Failure", { statusCode: reason, data: { reason: String(reason), ...attrs } })
}

type Outcome<A> = { readonly _tag: "ok"; readonly value: A } | { readonly _tag: "fail"; readonly error: unknown } | {
  readonly _tag: "hang"
}

const readAll = async (stream: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of stream) chunks.push(Buffer.from(chunk))
  return Buffer.concat(chunks)
}

const settle = <A>(outcome: Outcome<A>): Promise<A> =>
  outcome._tag === "ok"
    ? Promise.resolve(outcome.value)
    : outcome._tag === "fail"
    ? Promise.reject(outcome.error)
    : new Promise<A>(() => {})

export class FakeSocket implements BaileysSocket {
  readonly emitter = new EventEmitter()
  readonly wire = Object.assign(new EventEmitter(), { isOpen: true })
  buffering = false
  readonly ev = {
    on: <T extends keyof BaileysEventMap>(event: T, listener: (arg: BaileysEventMap[T]) => void) => {
      this.emitter.on(event, listener)
    },
    off: <T extends keyof BaileysEventMap>(event: T, listener: (arg: BaileysEventMap[T]) => void) => {
      this.emitter.off(event, listener)
    },
    isBuffering: () => this.buffering
  }
  readonly ws: SocketWire

  readonly sent: Array<{ jid: string; content: AnyMessageContent; options: MiscMessageGenerationOptions | undefined }> = []
  /** What `sendMessage` does; by default it answers with the message Baileys would build. */
  sendOutcome: (jid: string) => Outcome<WAMessage | undefined> | null = () => null
  /** What WhatsApp's server answers to a sent message: an ack, an ack with an error code, or nothing. */
  serverAck: { readonly _tag: "ack" } | { readonly _tag: "error"; readonly code: string } | { readonly _tag: "none" } = {
    _tag: "ack"
  }
  /** What the reach-out time lock query answers (Baileys also emits it as `reachoutTimeLock`). */
  timelock: ReachoutTimelock = { isActive: false }
  timelockQueries = 0
  readonly pairingRequests: Array<string> = []
  pairingOutcome: Outcome<string> = { _tag: "ok", value: "K7PQ3XWZ" }
  readonly checks: Array<Array<string>> = []
  /** Phones without WhatsApp: `onWhatsApp` leaves them out of its answer, as rc14 does (`socket.js`). */
  readonly withoutWhatsApp = new Set<string>()
  onWhatsAppOutcome: (phone: string) => Outcome<Array<{ jid: string; exists: boolean }> | undefined> = (phone) => ({
    _tag: "ok",
    value: this.withoutWhatsApp.has(phone) ? [] : [{ jid: `${phone}@s.whatsapp.net`, exists: true }]
  })
  readonly queries: Array<BinaryNode> = []
  /** What a ping gets: an answer, an error, or nothing at all. */
  queryOutcome: Outcome<unknown> = { _tag: "ok", value: { tag: "iq", attrs: { type: "result" } } }
  groups = new Map<string, GroupMetadata>()
  readonly groupFetches: Array<string> = []
  ended = 0
  loggedOut = 0

  constructor(readonly options: SocketOptions, readonly index: number) {
    const wire = this.wire
    this.ws = {
      on: (event, listener) => wire.on(event, listener),
      off: (event, listener) => wire.off(event, listener),
      get isOpen() {
        return wire.isOpen
      }
    }
  }

  get user() {
    return this.options.auth.creds.me
  }
  get creds(): AuthenticationCreds {
    return this.options.auth.creds
  }

  /**
   * As Baileys does, a file given as `{ stream }` is read whole (encrypted and uploaded) before
   * the message goes out; `sent` shows its bytes as a Buffer.
   */
  sendMessage = (jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions): Promise<WAMessage | undefined> => {
    const key = (["image", "video", "document", "audio"] as const).find((k) => k in content)
    const file = key === undefined ? undefined : (content as Record<string, unknown>)[key]
    if (file !== undefined && typeof file === "object" && file !== null && "stream" in file) {
      return readAll(file.stream as AsyncIterable<Uint8Array>).then((bytes) =>
        this.sendMessage(jid, { ...content, [key!]: bytes } as AnyMessageContent, options)
      )
    }
    this.sent.push({ jid, content, options })
    const outcome = this.sendOutcome(jid)
    if (outcome !== null) return settle(outcome)
    const id = options?.messageId ?? `3EB0${this.sent.length}`
    const message: WAMessage = {
      key: { remoteJid: jid, fromMe: true, id },
      message: "text" in content ? { extendedTextMessage: { text: content.text } } : { conversation: "(media)" },
      messageTimestamp: 1700000000,
      status: proto.WebMessageInfo.Status.PENDING
    }
    const ack = this.serverAck
    if (ack._tag !== "none") {
      setImmediate(() =>
        this.ackFrame(id, jid, ack._tag === "error" ? ack.code : undefined)
      )
    }
    return Promise.resolve(message)
  }
  /** WhatsApp's `<ack class="message" id from t [error]/>` for a sent message. */
  ackFrame(id: string, from: string, error?: string) {
    const attrs: Record<string, string> = { class: "message", id, from, t: "1700000000" }
    if (error !== undefined) attrs.error = error
    this.wire.emit("CB:ack,class:message", { tag: "ack", attrs })
  }
  /** `<iq type="error"><error code text/></iq>`, as WhatsApp answers a refused request. */
  iqError(code: string, text: string) {
    this.wire.emit("CB:iq,type:error", {
      tag: "iq",
      attrs: { from: "s.whatsapp.net", type: "error", id: "1234.5678-9" },
      content: [{ tag: "error", attrs: { code, text } }]
    })
  }
  fetchAccountReachoutTimelock = async () => {
    this.timelockQueries++
    this.emit("connection.update", { reachoutTimeLock: this.timelock as never })
    return this.timelock
  }
  allGroupFetches = 0
  groupFetchAllParticipating = async () => {
    this.allGroupFetches++
    return Object.fromEntries(this.groups)
  }
  requestPairingCode = (phone: string) => {
    this.pairingRequests.push(phone)
    return settle(this.pairingOutcome)
  }
  onWhatsApp = (...phones: Array<string>) => {
    this.checks.push(phones)
    return settle(this.onWhatsAppOutcome(phones[0]!))
  }
  groupMetadata = (jid: string) => {
    this.groupFetches.push(jid)
    const found = this.groups.get(jid)
    return found === undefined ? Promise.reject(new Boom("item-not-found", { statusCode: 404 })) : Promise.resolve(found)
  }
  query = (node: BinaryNode) => {
    this.queries.push(node)
    return settle(this.queryOutcome)
  }
  logout = async () => {
    this.loggedOut++
  }
  end = async () => {
    this.ended++
    this.wire.isOpen = false
  }

  // What WhatsApp does, in Baileys' event shapes

  emit<T extends keyof BaileysEventMap>(event: T, arg: BaileysEventMap[T]) {
    this.emitter.emit(event, arg)
  }
  /** A frame arrived (anything at all). */
  frame() {
    this.wire.emit("frame", { tag: "ib", attrs: {} })
  }
  connecting() {
    this.emit("connection.update", { connection: "connecting", receivedPendingNotifications: false, qr: undefined })
  }
  open() {
    this.emit("connection.update", { connection: "open" })
  }
  qr(text: string) {
    this.emit("connection.update", { qr: text })
  }
  close(statusCode: number | undefined, message = "Connection Failure") {
    this.closeWith(statusCode === undefined ? new Error(message) : new Boom(message, { statusCode }))
  }
  /** Baileys' `end(error)`: one of `Closes`. */
  closeWith(error: Error) {
    this.wire.isOpen = false
    this.emit("connection.update", { connection: "close", lastDisconnect: { error, date: new Date() } })
  }
  /** The phone scanned the QR / entered the code: Baileys stores the signed identity. */
  pairSuccess(phone: string) {
    const update: Partial<AuthenticationCreds> = {
      me: { id: `${phone}:7@s.whatsapp.net`, name: "Shop" },
      account: {
        details: Buffer.from("device-details"),
        accountSignatureKey: Buffer.alloc(32, 1),
        accountSignature: Buffer.alloc(64, 2),
        deviceSignature: Buffer.alloc(64, 3)
      },
      platform: "android"
    }
    Object.assign(this.creds, update)
    this.emit("creds.update", update)
    this.emit("connection.update", { isNewLogin: true, qr: undefined })
  }
  upsert(messages: Array<WAMessage>, type: "notify" | "append" = "notify") {
    this.emit("messages.upsert", { messages, type })
  }
}

const MEDIA_KINDS = new Set(["imageMessage", "videoMessage", "ptvMessage", "audioMessage", "documentMessage", "stickerMessage"])

/** A factory of fake sockets; `sockets` holds every one made, in order. */
export const make = () => {
  const sockets: Array<FakeSocket> = []
  const downloads: Array<string> = []
  let downloadOutcome: Outcome<Uint8Array> = { _tag: "ok", value: new Uint8Array([1, 2, 3]) }
  const versionFetches: Array<AbortSignal> = []
  let latest: Awaited<ReturnType<LatestVersion>> | "hang" = { version: [2, 3000, 1029999999], isLatest: true }
  const factory = {
    sockets,
    downloads,
    versionFetches,
    /** What the WhatsApp Web version fetch answers (Baileys' `fetchLatestWaWebVersion` shape). */
    setLatest: (answer: typeof latest) => {
      latest = answer
    },
    latest: () => {
      const last = sockets.at(-1)
      if (last === undefined) throw new Error("no socket was made")
      return last
    },
    setDownload: (outcome: Outcome<Uint8Array>) => {
      downloadOutcome = outcome
    },
    layer: Layer.succeed(SocketFactory, {
      make: (options) => {
        const socket = new FakeSocket(options, sockets.length)
        sockets.push(socket)
        return socket
      },
      download: (_socket, message) => {
        downloads.push(message.key.id ?? "")
        // Baileys' downloadMediaMessage finds the file in the content out of its usual wrappers
        // only, and refuses anything else the way it does.
        const kind = getContentType(extractMessageContent(message.message))
        if (kind === undefined || !MEDIA_KINDS.has(kind)) {
          return Promise.reject(new Boom(`"${kind}" message is not a media message`))
        }
        return settle(downloadOutcome).then((bytes) => Readable.from([Buffer.from(bytes)]))
      },
      latestVersion: (signal) => {
        versionFetches.push(signal)
        const answer = latest
        return answer === "hang" ? new Promise(() => {}) : Promise.resolve(answer)
      }
    })
  }
  return factory
}

export type FakeFactory = ReturnType<typeof make>
