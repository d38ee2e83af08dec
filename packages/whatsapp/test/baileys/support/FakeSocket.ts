/**
 * A stand-in for Baileys' socket that emits Baileys' own event shapes (`connection.update` with
 * a Boom in `lastDisconnect`, `creds.update`, `messages.upsert`, `messages.update`,
 * `message-receipt.update`...) when the test says so, and records what the driver asks of it.
 */
import { Boom } from "@hapi/boom"
import type {
  AnyMessageContent,
  AuthenticationCreds,
  BaileysEventMap,
  BinaryNode,
  GroupMetadata,
  MiscMessageGenerationOptions,
  WAMessage
} from "@whiskeysockets/baileys"
import * as Layer from "effect/Layer"
import { EventEmitter } from "node:events"
import { type BaileysSocket, SocketFactory, type SocketOptions, type SocketWire } from "../../../src/baileys/BaileysSocket.js"

type Outcome<A> = { readonly _tag: "ok"; readonly value: A } | { readonly _tag: "fail"; readonly error: unknown } | {
  readonly _tag: "hang"
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
  sendOutcome: (jid: string) => Outcome<WAMessage | undefined> = () => ({ _tag: "ok", value: undefined })
  readonly pairingRequests: Array<string> = []
  pairingOutcome: Outcome<string> = { _tag: "ok", value: "K7PQ3XWZ" }
  readonly checks: Array<Array<string>> = []
  onWhatsAppOutcome: (phone: string) => Outcome<Array<{ jid: string; exists: boolean }> | undefined> = (phone) => ({
    _tag: "ok",
    value: [{ jid: `${phone}@s.whatsapp.net`, exists: true }]
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

  sendMessage = (jid: string, content: AnyMessageContent, options?: MiscMessageGenerationOptions) => {
    this.sent.push({ jid, content, options })
    return settle(this.sendOutcome(jid))
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
    this.wire.isOpen = false
    const error = statusCode === undefined ? new Error(message) : new Boom(message, { statusCode })
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

/** A factory of fake sockets; `sockets` holds every one made, in order. */
export const make = () => {
  const sockets: Array<FakeSocket> = []
  const downloads: Array<string> = []
  let downloadOutcome: Outcome<Uint8Array> = { _tag: "ok", value: new Uint8Array([1, 2, 3]) }
  const factory = {
    sockets,
    downloads,
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
        return settle(downloadOutcome)
      }
    })
  }
  return factory
}

export type FakeFactory = ReturnType<typeof make>
