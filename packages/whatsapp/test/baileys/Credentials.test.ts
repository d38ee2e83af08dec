/**
 * `creds.update` is saved at the moment Baileys emits it, through the same ordered writer as the
 * keys, whatever the session's fiber is doing: replayed as rc14's `uploadPreKeys` does it (inside
 * `keys.transaction`: the new pre-keys set, `creds.update` with the next pre-key id emitted, the
 * transaction committed, then the upload), while the number's entity is still busy with a message.
 */
import { assert, describe, it } from "@effect/vitest"
import { addTransactionCapability, type WAMessage } from "@whiskeysockets/baileys"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { WriteOp } from "../../src/baileys/NumberAuth.js"
import * as Recorder from "../support/Recorder.js"
import * as Harness from "./support/Harness.js"

const { flush } = Harness

const silent = {
  level: "silent",
  child: () => silent,
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {}
}

describe("Baileys driver: credentials", () => {
  it.scoped("creds.update is written when Baileys emits it, before the keys of its transaction, while the entity is busy", () => {
    const h = Harness.make()
    Harness.storeLinked(h, 1)
    return Effect.gen(function*() {
      // The entity takes its time over an incoming message: the session's fiber waits on it.
      const busy = yield* Deferred.make<void>()
      const rec = Recorder.make({ handle: (e) => (e._tag === "Incoming" ? Deferred.await(busy) : Effect.void) })
      yield* Harness.open({ id: 1, linked: true }, rec)
      const socket = h.fake.latest()
      socket.open()
      yield* flush
      rec.take()
      const message: WAMessage = {
        key: { remoteJid: "77017654321@s.whatsapp.net", id: "3A0C01", fromMe: false },
        message: { conversation: "hello" },
        messageTimestamp: 1_764_000_000
      }
      socket.upsert([message])
      yield* flush

      // What reaches the store, in order.
      const written: Array<string> = []
      const write = h.backend.write
      const backend = h.backend as { write: typeof write }
      backend.write = (numberId: number, ops: ReadonlyArray<WriteOp>) => {
        for (const op of ops) {
          written.push(
            op._tag === "Creds"
              ? `creds next=${JSON.parse(op.json).nextPreKeyId}`
              : op._tag === "Keys"
              ? `keys ${op.rows.map((r) => `${r.kind}/${r.id}`).join(",")}`
              : "reset"
          )
        }
        return write(numberId, ops)
      }

      // rc14 socket.js uploadPreKeys, with Baileys' own transaction layer over the driver's key store.
      const keys = addTransactionCapability(socket.options.auth.keys, silent as never, { maxCommitRetries: 1, delayBetweenTriesMs: 0 })
      const creds = socket.creds
      const next = creds.nextPreKeyId + 1
      yield* Effect.promise(() =>
        keys.transaction(async () => {
          await keys.set({ "pre-key": { [String(creds.nextPreKeyId)]: { public: Buffer.alloc(32, 1), private: Buffer.alloc(32, 2) } } })
          const update = { nextPreKeyId: next, firstUnuploadedPreKeyId: next }
          Object.assign(creds, update)
          socket.emit("creds.update", update)
        }, "upload-pre-keys")
      )
      yield* flush

      // Saved while the entity is still busy (the fiber never got to it), and before the keys.
      assert.isFalse(yield* Deferred.isDone(busy))
      assert.strictEqual(Harness.credsOf(h, 1)?.nextPreKeyId, next)
      assert.deepStrictEqual(written, [`creds next=${next}`, `keys pre-key/${next - 1}`])
      assert.isDefined(h.backend.rows.get(1)?.get(`pre-key/${next - 1}`))

      yield* Deferred.succeed(busy, undefined)
      yield* flush
      assert.deepStrictEqual(rec.take().map((l) => l.replace(/^\d+ /, "")), ["in 77017654321: hello"])
    }).pipe(Effect.provide(h.layer))
  })
})
