/**
 * Baileys auth state in a real PostgreSQL: credentials and signal keys survive a restart as
 * Baileys wrote them, key writes are durable when their promise resolves, concurrent writes
 * lose nothing, a refused write leaves no part behind, and a reset forgets one number only.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Database from "@wagate/store/Database"
import { addTransactionCapability, proto, type SignalKeyStore } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { AuthStore } from "../../src/baileys/AuthStore.js"
import * as PgAuthStore from "../../src/baileys/PgAuthStore.js"

const TestLayer = PgAuthStore.layer.pipe(Layer.provideMerge(Database.layerTest))

const silent = { level: "silent", child: () => silent, trace() {}, debug() {}, info() {}, warn() {}, error() {} }

/** A number row for the auth state to belong to. */
const newNumber = (phone: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [account] = yield* sql<{ id: string }>`
      INSERT INTO accounts (email, company) VALUES (${`${phone}@example.kz`}, 'ACME') RETURNING id`
    const [number] = yield* sql<{ id: string }>`
      INSERT INTO numbers (account_id, phone) VALUES (${account!.id}, ${phone}) RETURNING id`
    return Number(number!.id)
  })

/** The number's auth state in a scope of its own, closed by `close`. */
const openAuth = (numberId: number) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const auth = yield* Scope.extend(Effect.flatMap(AuthStore, (s) => s.open(numberId)), scope)
    return { auth, close: Scope.close(scope, Exit.void) }
  })

const rows = (numberId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ kind: string; key_id: string }>`
      SELECT kind, key_id FROM wa_auth_state WHERE number_id = ${numberId} ORDER BY kind, key_id`.pipe(
      Effect.map((rs) => rs.map((r) => `${r.kind}/${r.key_id}`))
    ))

const get = (keys: SignalKeyStore, kind: "session" | "pre-key" | "sender-key", ids: Array<string>) =>
  Effect.promise(() => Promise.resolve(keys.get(kind, ids)))
const set = (keys: SignalKeyStore, data: Parameters<SignalKeyStore["set"]>[0]) =>
  Effect.promise(() => Promise.resolve(keys.set(data)))

layer(TestLayer, { excludeTestServices: true, timeout: 60_000 })("Baileys auth state in PostgreSQL", (it) => {
  it.effect("credentials survive a restart with their keys; a new device is not linked until the phone signs it", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550001")
      const first = yield* openAuth(id)
      assert.isFalse(first.auth.isLinked())
      const noise = Buffer.from(first.auth.state.creds.noiseKey.private)
      const creds = first.auth.state.creds
      creds.me = { id: "77015550001:3@s.whatsapp.net", name: "Shop" }
      creds.account = { details: Buffer.from([1, 2, 3]), accountSignature: Buffer.alloc(64, 9) }
      yield* first.auth.saveCreds
      // Durable as soon as saveCreds returns.
      assert.deepStrictEqual(yield* rows(id), ["creds/"])
      yield* first.close

      const second = yield* openAuth(id)
      assert.isTrue(second.auth.isLinked())
      const back = second.auth.state.creds
      assert.isTrue(Buffer.isBuffer(back.noiseKey.private))
      assert.isTrue(Buffer.from(back.noiseKey.private).equals(noise))
      assert.deepStrictEqual([...Buffer.from(back.account!.details!)], [1, 2, 3])
      assert.strictEqual(back.registrationId, creds.registrationId)
      assert.strictEqual(back.me?.id, "77015550001:3@s.whatsapp.net")
      yield* second.close
    }))

  it.effect("keys come back as Baileys wrote them (app-state keys as protobuf); null deletes", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550002")
      const a = yield* openAuth(id)
      yield* set(a.auth.state.keys, {
        session: { "77019990001.0": new Uint8Array([5, 6, 7]) },
        "pre-key": { "1": { public: new Uint8Array(32).fill(1), private: new Uint8Array(32).fill(2) } },
        "app-state-sync-key": { AAAA: { keyData: new Uint8Array([9, 9]), timestamp: 1700000000 } },
        "lid-mapping": { "77019990001": "123456789012345", "123456789012345_reverse": "77019990001" }
      })
      yield* a.close

      const b = yield* openAuth(id)
      const keys = b.auth.state.keys
      const sessions = yield* get(keys, "session", ["77019990001.0", "nobody.0"])
      assert.deepStrictEqual(Object.keys(sessions), ["77019990001.0"])
      assert.deepStrictEqual([...(sessions["77019990001.0"] as Uint8Array)], [5, 6, 7])
      const preKeys = yield* Effect.promise(() => Promise.resolve(keys.get("pre-key", ["1"])))
      assert.deepStrictEqual([...preKeys["1"]!.private], new Array(32).fill(2))
      const appState = yield* Effect.promise(() => Promise.resolve(keys.get("app-state-sync-key", ["AAAA"])))
      assert.instanceOf(appState["AAAA"], proto.Message.AppStateSyncKeyData)
      assert.deepStrictEqual([...appState["AAAA"]!.keyData!], [9, 9])
      const lids = yield* Effect.promise(() => Promise.resolve(keys.get("lid-mapping", ["123456789012345_reverse"])))
      assert.deepStrictEqual(lids, { "123456789012345_reverse": "77019990001" })

      yield* set(keys, { session: { "77019990001.0": null } })
      assert.deepStrictEqual(yield* get(keys, "session", ["77019990001.0"]), {})
      assert.deepStrictEqual(yield* rows(id), [
        "app-state-sync-key/AAAA",
        "lid-mapping/123456789012345_reverse",
        "lid-mapping/77019990001",
        "pre-key/1"
      ])
      yield* b.close
    }))

  it.effect("a key write is in the database when its promise resolves", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550003")
      const a = yield* openAuth(id)
      for (let i = 0; i < 5; i++) {
        yield* set(a.auth.state.keys, { "sender-key": { [`g${i}`]: new Uint8Array([i]) } })
        assert.strictEqual((yield* rows(id)).length, i + 1)
      }
      yield* a.close
    }))

  it.effect("300 concurrent writes: nothing lost, the last value of a key wins, reads see writes not yet committed", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550004")
      const a = yield* openAuth(id)
      const keys = a.auth.state.keys
      const writes: Array<Promise<void>> = []
      for (let i = 0; i < 150; i++) {
        writes.push(Promise.resolve(keys.set({ "pre-key": { [String(i)]: { public: new Uint8Array([i]), private: new Uint8Array([i]) } } })))
        writes.push(Promise.resolve(keys.set({ session: { hot: new Uint8Array([i]) } })))
      }
      // Before any of them committed, a read already sees the newest value.
      const early = yield* get(keys, "session", ["hot"])
      assert.deepStrictEqual([...(early["hot"] as Uint8Array)], [149])
      yield* Effect.promise(() => Promise.all(writes))
      yield* a.close

      const b = yield* openAuth(id)
      const all = yield* get(b.auth.state.keys, "pre-key", Array.from({ length: 150 }, (_, i) => String(i)))
      assert.strictEqual(Object.keys(all).length, 150)
      assert.deepStrictEqual([...((yield* get(b.auth.state.keys, "session", ["hot"]))["hot"] as Uint8Array)], [149])
      yield* b.close
    }))

  it.effect("two stores writing one number at once (a number moving between runners) lose nothing", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550005")
      const a = yield* openAuth(id)
      const b = yield* openAuth(id)
      const writes: Array<Promise<void>> = []
      for (let i = 0; i < 100; i++) {
        writes.push(Promise.resolve(a.auth.state.keys.set({ session: { [`a${i}`]: new Uint8Array([i]) } })))
        writes.push(Promise.resolve(b.auth.state.keys.set({ session: { [`b${i}`]: new Uint8Array([i]) } })))
      }
      yield* Effect.promise(() => Promise.all(writes))
      yield* a.close
      yield* b.close
      assert.strictEqual((yield* rows(id)).length, 200)
    }))

  it.effect("a write the database refuses fails alone, leaves no part behind and is not served from memory", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550006")
      const a = yield* openAuth(id)
      const keys = a.auth.state.keys
      // PostgreSQL's jsonb refuses the NUL character: the whole set must be refused.
      const bad = Promise.resolve(keys.set({
        session: { half: new Uint8Array([1]) },
        "sender-key-memory": { "g@g.us": { "\u0000": true } }
      }))
      const good = Promise.resolve(keys.set({ session: { other: new Uint8Array([2]) } }))
      const results = yield* Effect.promise(() => Promise.allSettled([bad, good]))
      assert.deepStrictEqual(results.map((r) => r.status), ["rejected", "fulfilled"])
      assert.deepStrictEqual(yield* rows(id), ["session/other"])
      assert.deepStrictEqual(Object.keys(yield* get(keys, "session", ["half", "other"])), ["other"])
      yield* a.close
    }))

  it.effect("Baileys' transactions over the store commit once, at the end, all together", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550007")
      const a = yield* openAuth(id)
      const tx = addTransactionCapability(a.auth.state.keys, silent, { maxCommitRetries: 1, delayBetweenTriesMs: 0 })
      const sql = yield* SqlClient.SqlClient
      const inside: Array<number> = []
      yield* Effect.promise(() =>
        tx.transaction(async () => {
          await tx.set({ session: { one: new Uint8Array([1]) } })
          await tx.set({ "sender-key": { two: new Uint8Array([2]) } })
          inside.push((await Effect.runPromise(sql`SELECT 1 FROM wa_auth_state WHERE number_id = ${id}`)).length)
        }, "test")
      )
      assert.deepStrictEqual(inside, [0])
      assert.deepStrictEqual(yield* rows(id), ["sender-key/two", "session/one"])
      yield* a.close
    }))

  it.effect("reset forgets one number's credentials and keys, and nothing of another's", () =>
    Effect.gen(function*() {
      const one = yield* newNumber("77015550008")
      const two = yield* newNumber("77015550009")
      const a = yield* openAuth(one)
      const b = yield* openAuth(two)
      for (const x of [a, b]) {
        x.auth.state.creds.me = { id: "1@s.whatsapp.net" }
        x.auth.state.creds.account = { details: Buffer.from([1]) }
        yield* x.auth.saveCreds
        yield* set(x.auth.state.keys, { session: { s: new Uint8Array([1]) } })
      }
      yield* a.auth.reset
      assert.isFalse(a.auth.isLinked())
      assert.deepStrictEqual(yield* get(a.auth.state.keys, "session", ["s"]), {})
      assert.deepStrictEqual(yield* rows(one), [])
      assert.deepStrictEqual(yield* rows(two), ["creds/", "session/s"])
      yield* a.close
      yield* b.close
    }))

  it.effect("closing finishes the writes already made; a write after closing is refused", () =>
    Effect.gen(function*() {
      const id = yield* newNumber("77015550010")
      const a = yield* openAuth(id)
      const keys = a.auth.state.keys
      const pending = Array.from({ length: 20 }, (_, i) => Promise.resolve(keys.set({ session: { [`k${i}`]: new Uint8Array([i]) } })))
      yield* a.close
      yield* Effect.promise(() => Promise.all(pending))
      assert.strictEqual((yield* rows(id)).length, 20)
      const late = yield* Effect.promise(() => Promise.allSettled([Promise.resolve(keys.set({ session: { late: new Uint8Array([1]) } }))]))
      assert.strictEqual(late[0]!.status, "rejected")
      assert.strictEqual((yield* rows(id)).length, 20)
    }))
})

describe("auth state", () => {
  it("never touches local disk: no file store, no fs in the driver", () => {
    const dir = fileURLToPath(new URL("../../src/baileys/", import.meta.url))
    const sources = readdirSync(dir).filter((f) => f.endsWith(".ts")).map((f) => readFileSync(join(dir, f), "utf8"))
    assert.isAbove(sources.length, 10)
    for (const source of sources) {
      assert.notMatch(source, /useMultiFileAuthState|from "node:fs"|from "fs"|writeFile/)
    }
  })
})
