/**
 * Baileys sessions at scale, without a network: `--numbers` linked numbers (1,000 by default),
 * each with credentials and signal keys in PostgreSQL, are woken as after a restart (through
 * their entities, 16 at a time with jitter, as the supervisor does) on the real gateway (HTTP,
 * cluster, Number entities, the Baileys driver with its PostgreSQL auth state); only the socket
 * is the tests' fake, which loads part of its keys (as Baileys does when it decrypts) and opens.
 * Every number then receives one message, so the driver's caches and the entity's state are
 * warm. Reported: the time until all are WORKING, and the memory per number beyond the same
 * number of bare fake sockets. Results: docs/performance.md.
 *
 *   npm run bench -- baileys [--numbers 1000] [--sessions 20] [--pre-keys 30]
 *     [--wake-concurrency 16] [--jitter-ms 250]
 *
 * The last two change the pace of waking (the supervisor's is 16 and 250 ms), to see what the
 * entities and the driver cost without it.
 *
 * Target (issue 4): under 20 MiB of our own memory per connected number beyond the socket; a
 * miss exits non-zero (`--no-fail` through run.ts turns that off).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as NumberSupervisor from "@wagate/numbers/NumberSupervisor"
import * as Database from "@wagate/store/Database"
import * as BaileysDriver from "@wagate/whatsapp/BaileysDriver"
import * as AuthCodec from "@wagate/whatsapp/baileys/AuthCodec"
import { SocketFactory } from "@wagate/whatsapp/baileys/BaileysSocket"
import * as PgAuthStore from "@wagate/whatsapp/baileys/PgAuthStore"
import { initAuthCreds, type WAMessage } from "@whiskeysockets/baileys"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { Readable } from "node:stream"
import { parseArgs } from "node:util"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { FakeSocket } from "../../packages/whatsapp/test/baileys/support/FakeSocket.js"
import { freshDatabase, simulatedNetwork, startGateway } from "../support/TestGateway.js"
import { machine } from "./support/Processes.js"
import * as Verdict from "./support/Verdict.js"

const options = (argv: ReadonlyArray<string>) => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      numbers: { type: "string", default: "1000" },
      sessions: { type: "string", default: "20" },
      "pre-keys": { type: "string", default: "30" },
      "wake-concurrency": { type: "string", default: String(NumberSupervisor.WAKE_CONCURRENCY) },
      "jitter-ms": { type: "string", default: String(NumberSupervisor.WAKE_JITTER_MS) }
    }
  })
  return {
    numbers: Number(values.numbers),
    sessions: Number(values.sessions),
    preKeys: Number(values["pre-keys"]),
    wakeConcurrency: Number(values["wake-concurrency"]),
    jitterMs: Number(values["jitter-ms"])
  }
}

setFlagsFromString("--expose-gc")
const gc: () => void = runInNewContext("gc")

interface Memory {
  readonly rss: number
  readonly heap: number
  readonly external: number
}

/** Memory after full collections, settled. */
const settledMemory = Effect.promise(async (): Promise<Memory> => {
  for (let i = 0; i < 4; i++) {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  const m = process.memoryUsage()
  return { rss: m.rss, heap: m.heapUsed, external: m.external }
})

const perNumber = (a: Memory, b: Memory, n: number) => ({
  rss: (b.rss - a.rss) / n,
  heap: (b.heap - a.heap) / n,
  external: (b.external - a.external) / n
})

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

const phoneOf = (i: number) => `7709${String(i).padStart(7, "0")}`

/** A session record of the size Baileys keeps per contact device (a few KB). */
const sessionRecord = () => ({ _sessions: { [randomBytes(33).toString("base64")]: { chain: randomBytes(1500) } }, version: "v1" })

/** An account, `n` linked numbers and their auth state, written the way the driver writes it. */
const seed = (n: number, sessions: number, preKeys: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [account] = yield* sql<{ id: string }>`
      INSERT INTO accounts (email, company) VALUES ('bench@example.kz', 'Bench LLP') RETURNING id`
    // Paid up (330 KZT a day per number), so the drawdown pauses none of them.
    yield* sql`INSERT INTO ledger (account_id, amount, kind, note) VALUES (${account!.id}, ${n * 33_000 * 30}, 'top_up', 'bench')`
    const ids: Array<number> = []
    for (let from = 0; from < n; from += 500) {
      const rows = Array.from({ length: Math.min(500, n - from) }, (_, i) => ({
        account_id: account!.id,
        phone: phoneOf(from + i),
        status: "STARTING",
        linked: true
      }))
      const inserted = yield* sql<{ id: string }>`INSERT INTO numbers ${sql.insert(rows)} RETURNING id`
      ids.push(...inserted.map((r) => Number(r.id)))
    }
    for (const [i, id] of ids.entries()) {
      const creds = initAuthCreds()
      creds.me = { id: `${phoneOf(i)}:7@s.whatsapp.net`, name: "Bench" }
      creds.account = {
        details: randomBytes(64),
        accountSignatureKey: randomBytes(32),
        accountSignature: randomBytes(64),
        deviceSignature: randomBytes(64)
      }
      const rows = [
        { number_id: id, kind: AuthCodec.CREDS, key_id: "", value: AuthCodec.encode(creds) },
        ...Array.from({ length: sessions }, (_, k) => ({
          number_id: id,
          kind: "session",
          key_id: `${phoneOf(100_000 + k)}.0`,
          value: AuthCodec.encode(sessionRecord())
        })),
        ...Array.from({ length: preKeys }, (_, k) => ({
          number_id: id,
          kind: "pre-key",
          key_id: String(k + 1),
          value: AuthCodec.encode({ public: randomBytes(32), private: randomBytes(32) })
        }))
      ]
      yield* sql`INSERT INTO wa_auth_state ${sql.insert(rows)}`
    }
    return ids
  })

export const main = (argv: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const opts = options(argv)
    yield* Console.log(`machine: ${machine()}`)
    yield* Console.log(`numbers: ${opts.numbers}, each with ${opts.sessions} sessions and ${opts.preKeys} pre-keys stored`)

    // A fresh database; the gateway gets a pool of 10 like a production process.
    const fresh = yield* freshDatabase
    const sql = Context.get(fresh, SqlClient.SqlClient)
    const [{ name }] = yield* sql<{ name: string }>`SELECT current_database() AS name`.pipe(Effect.orDie)
    const url = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test")
    url.pathname = `/${name}`
    const database = yield* Layer.build(Database.layerPostgres({ url: Redacted.make(url.toString()), maxConnections: 10 }))

    const seeding = performance.now()
    const ids = yield* seed(opts.numbers, opts.sessions, opts.preKeys).pipe(Effect.provide(database), Effect.orDie)
    yield* Console.log(`seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s`)

    // The fake socket: reads part of the number's keys, as Baileys does, then opens.
    const sockets: Array<FakeSocket> = []
    const sessionIds = Array.from({ length: opts.sessions }, (_, k) => `${phoneOf(100_000 + k)}.0`)
    const preKeyIds = Array.from({ length: opts.preKeys }, (_, k) => String(k + 1))
    const factory = Layer.succeed(SocketFactory, {
      make: (socketOptions) => {
        const socket = new FakeSocket(socketOptions, sockets.length)
        sockets.push(socket)
        void Promise.all([
          socketOptions.auth.keys.get("session", sessionIds),
          socketOptions.auth.keys.get("pre-key", preKeyIds)
        ]).then(() => socket.open())
        return socket
      },
      download: () => Promise.resolve(Readable.from([])),
      latestVersion: () => Promise.resolve({ version: [2, 3000, 1] as const, isLatest: true })
    })
    const driver = yield* Layer.build(
      BaileysDriver.layerTest({ logLevel: "silent" }).pipe(
        Layer.provide(factory),
        Layer.provide(PgAuthStore.layer),
        Layer.provide(Layer.succeedContext(database))
      )
    )
    const gateway = yield* startGateway(database, { sim: Context.merge(yield* simulatedNetwork, driver) })
    const inDatabase = <A>(effect: Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
      effect.pipe(Effect.provide(database), Effect.orDie)
    const count = (query: Effect.Effect<ReadonlyArray<{ n: string }>, unknown, SqlClient.SqlClient>) =>
      Effect.map(inDatabase(query), (rows) => Number(rows[0]!.n))
    const waitFor = (what: Effect.Effect<number>, target: number, timeoutMs: number) =>
      Effect.gen(function*() {
        const deadline = Date.now() + timeoutMs
        for (;;) {
          const n = yield* what
          if (n >= target) return
          if (Date.now() > deadline) return yield* Effect.dieMessage(`only ${n} of ${target} after ${timeoutMs} ms`)
          yield* Effect.sleep("100 millis")
        }
      })

    const before = yield* settledMemory

    // Waking, as the supervisor does after a restart: 16 at a time, each after up to 250 ms.
    const woken = performance.now()
    yield* NumberSupervisor.spread(ids, (id) => Effect.ignore(gateway.ops.ops.linkStatus({ path: { id } })), {
      concurrency: opts.wakeConcurrency,
      jitterMs: opts.jitterMs
    })
    const wakeMs = performance.now() - woken
    yield* waitFor(
      count(Effect.flatMap(SqlClient.SqlClient, (s) => s<{ n: string }>`SELECT count(*) AS n FROM numbers WHERE status = 'WORKING'`)),
      ids.length,
      600_000
    )
    const activationMs = performance.now() - woken

    // One message to each number, from a contact known by LID, so the caches are in use.
    const at = Math.floor(Date.now() / 1000)
    for (const [i, socket] of sockets.entries()) {
      const lid = `${900_000_000 + i}@lid`
      socket.emit("lid-mapping.update", { lid, pn: `${phoneOf(200_000 + i)}@s.whatsapp.net` })
      const message: WAMessage = {
        key: { remoteJid: lid, id: `3A${String(i).padStart(10, "0")}`, fromMe: false },
        message: { conversation: "Hello, is the order ready?" },
        messageTimestamp: at,
        pushName: "Customer"
      }
      socket.upsert([message])
    }
    yield* waitFor(
      count(Effect.flatMap(SqlClient.SqlClient, (s) => s<{ n: string }>`SELECT count(*) AS n FROM messages`)),
      ids.length,
      600_000
    )
    const loaded = yield* settledMemory

    // The baseline: as many bare fake sockets, held the same way.
    const bare: Array<FakeSocket> = []
    for (let i = 0; i < ids.length; i++) {
      bare.push(new FakeSocket(sockets[i]!.options, -1))
    }
    const withBare = yield* settledMemory
    const entity = perNumber(before, loaded, ids.length)
    const socket = perNumber(loaded, withBare, ids.length)
    const ours = { rss: entity.rss - socket.rss, heap: entity.heap - socket.heap }

    yield* Console.log("")
    yield* Console.log(`| numbers | wake (${opts.wakeConcurrency} at a time, jitter ${opts.jitterMs} ms) | all WORKING | per number: RSS | heap | external | bare fake socket: RSS | heap | ours: RSS | heap |`)
    yield* Console.log(`|---|---|---|---|---|---|---|---|---|---|`)
    yield* Console.log(
      `| ${ids.length} | ${(wakeMs / 1000).toFixed(1)} s | ${(activationMs / 1000).toFixed(1)} s | ${kib(entity.rss)} | ${kib(entity.heap)} | ` +
        `${kib(entity.external)} | ${kib(socket.rss)} | ${kib(socket.heap)} | ${kib(ours.rss)} | ${kib(ours.heap)} |`
    )
    yield* Console.log("")
    yield* Console.log(
      `process: RSS ${(before.rss / 2 ** 20).toFixed(0)} MiB before waking, ${(loaded.rss / 2 ** 20).toFixed(0)} MiB with ` +
        `${ids.length} numbers WORKING; heap ${(before.heap / 2 ** 20).toFixed(0)} -> ${(loaded.heap / 2 ** 20).toFixed(0)} MiB`
    )
    if (bare.length !== ids.length || sockets.length < ids.length) yield* Effect.dieMessage("sockets were not all made")
    // The target of issue 4: under 20 MB of our own overhead per connected number, beyond the
    // socket (the baseline: as many bare fake sockets, measured in this run).
    yield* Verdict.verdict("baileys", [
      {
        what: `heap per connected number beyond the socket (${ids.length} numbers)`,
        target: "< 20 MiB",
        measured: kib(ours.heap),
        baseline: `bare fake socket ${kib(socket.heap)}`,
        met: ours.heap < 20 * 2 ** 20
      },
      {
        what: `RSS per connected number beyond the socket (${ids.length} numbers)`,
        target: "< 20 MiB",
        measured: kib(ours.rss),
        baseline: `bare fake socket ${kib(socket.rss)}`,
        met: ours.rss < 20 * 2 ** 20
      }
    ])
  }))
