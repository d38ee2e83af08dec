/**
 * The real thing, short of WhatsApp: the driver as the gateway runs it (Baileys' `makeWASocket`,
 * auth state in PostgreSQL) pointed at a WebSocket server of the test on loopback. Linking a
 * number makes Baileys open the WebSocket and send the first message of the Noise handshake:
 * the WhatsApp intro header and a `HandshakeMessage` with the client hello.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import { initAuthCreds, proto } from "@whiskeysockets/baileys"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { IncomingMessage } from "node:http"
import { WebSocketServer } from "ws"
import * as BaileysDriver from "../../src/BaileysDriver.js"
import * as LiveSocketFactory from "../../src/baileys/LiveSocketFactory.js"
import { type DriverEvent, WhatsAppDriver } from "../../src/WhatsAppDriver.js"

/** What WhatsApp Web's first frame starts with: "WA", the protocol version, the dictionary version. */
const INTRO = [0x57, 0x41, 6, 3]

interface FirstFrame {
  readonly bytes: Buffer
  readonly request: IncomingMessage
}

/** A WebSocket server on a free loopback port that hands over the first binary frame it gets. */
const server = Effect.gen(function*() {
  const first = yield* Deferred.make<FirstFrame>()
  const wss = yield* Effect.acquireRelease(
    Effect.async<WebSocketServer>((resume) => {
      const s = new WebSocketServer({ host: "127.0.0.1", port: 0 }, () => resume(Effect.succeed(s)))
    }),
    (s) =>
      Effect.async<void>((resume) => {
        for (const client of s.clients) client.terminate()
        s.close(() => resume(Effect.void))
      })
  )
  wss.on("connection", (socket, request) => {
    socket.once("message", (data) => {
      Deferred.unsafeDone(first, Exit.succeed({ bytes: Buffer.from(data), request }))
    })
  })
  const { port } = wss.address() as { port: number }
  return { url: `ws://127.0.0.1:${port}/ws/chat`, first: Deferred.await(first) }
})

const newNumber = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [account] = yield* sql<{ id: string }>`
    INSERT INTO accounts (email, company) VALUES ('handshake@example.kz', 'ACME') RETURNING id`
  const [number] = yield* sql<{ id: string }>`
    INSERT INTO numbers (account_id, phone) VALUES (${account!.id}, '77015550100') RETURNING id`
  return Number(number!.id)
})

describe("Baileys driver: the real socket", () => {
  it.scopedLive("makeWASocket on our PostgreSQL auth state opens the WebSocket and sends the Noise client hello", () =>
    Effect.gen(function*() {
      const ws = yield* server
      const database = yield* Layer.build(Database.layerTest)
      const driverContext = yield* Layer.build(
        BaileysDriver.layer({ webSocketUrl: ws.url, logLevel: "silent", version: [2, 3000, 1029999999] }).pipe(Layer.provide(Layer.succeedContext(database)))
      )
      const driver = Context.get(driverContext, WhatsAppDriver)
      const numberId = yield* newNumber.pipe(Effect.provide(database))
      const events: Array<DriverEvent> = []
      const sessionScope = yield* Scope.make()
      const session = yield* driver.open({ id: numberId, phone: "77015550100", linked: false }, (e) =>
        Effect.sync(() => void events.push(e))).pipe(Scope.extend(sessionScope))

      yield* session.link({ kind: "qr" })
      const { bytes, request } = yield* ws.first.pipe(Effect.timeout("20 seconds"))

      assert.strictEqual(request.url, "/ws/chat")
      assert.deepStrictEqual([...bytes.subarray(0, 4)], INTRO)
      // A three-byte length, then exactly that many bytes of HandshakeMessage.
      const length = (bytes[4]! << 16) | (bytes[5]! << 8) | bytes[6]!
      assert.strictEqual(bytes.length, 7 + length)
      const hello = proto.HandshakeMessage.decode(bytes.subarray(7))
      assert.strictEqual(hello.clientHello?.ephemeral?.length, 32)
      // Nothing of the device's identity goes out before the server answered.
      assert.isNull(hello.clientFinish ?? null)
      assert.deepStrictEqual(events.map((e) => e._tag === "Connection" ? e.status : e._tag), ["none", "STARTING"])

      yield* Scope.close(sessionScope, Exit.void)
    }), 60_000)

  it.scopedLive("history sync: the initial syncs only (LID mappings, trusted-contact tokens); Baileys' DANGER warning is not printed; broadcasts and channels ignored", () =>
    Effect.gen(function*() {
      const { HistorySyncType } = proto.Message
      const synced = (syncType: number) => LiveSocketFactory.shouldSyncHistoryMessage({ syncType })
      assert.deepStrictEqual(
        [HistorySyncType.INITIAL_BOOTSTRAP, HistorySyncType.RECENT, HistorySyncType.PUSH_NAME, HistorySyncType.NON_BLOCKING_DATA]
          .map(synced),
        [true, true, true, true]
      )
      assert.deepStrictEqual([HistorySyncType.FULL, HistorySyncType.ON_DEMAND].map(synced), [false, false])
      assert.deepStrictEqual(
        ["status@broadcast", "120363000000000001@newsletter", "77017654321@s.whatsapp.net", "1@g.us"].map(
          LiveSocketFactory.shouldIgnoreJid
        ),
        [true, true, false, false]
      )

      const ws = yield* server
      const warnings: Array<string> = []
      const logger: any = {
        level: "warn",
        child: () => logger,
        trace: () => {},
        debug: () => {},
        info: () => {},
        warn: (obj: unknown, msg?: string) => void warnings.push(`${typeof obj === "string" ? obj : ""} ${msg ?? ""}`),
        error: () => {}
      }
      const socket = LiveSocketFactory.makeSocket({
        auth: { creds: initAuthCreds(), keys: { get: async () => ({}), set: async () => {} } },
        logger,
        webSocketUrl: ws.url,
        version: [2, 3000, 1029999999],
        browser: ["Windows", "Chrome", "10.0.22631"],
        cachedGroupMetadata: async () => undefined,
        getMessage: async () => undefined,
        msgRetryCounterCache: { get: () => undefined, set: () => {}, del: () => {}, flushAll: () => {} }
      })
      yield* ws.first.pipe(Effect.timeout("20 seconds"))
      yield* Effect.promise(() => socket.end(undefined))
      assert.isFalse(warnings.some((w) => /DANGER/.test(w)), warnings.join("\n"))
    }), 60_000)
})
