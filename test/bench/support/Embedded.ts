/**
 * The first-page mix against the gateway on its embedded database (PGlite in DATA_DIR, one
 * connection, shared state in memory: what `npm start` runs with nothing configured). The data
 * is seeded with the same statements as on PostgreSQL, by opening the gateway's PGlite directory
 * while the gateway is stopped (PGlite allows one process).
 * The data directory is kept under the system's temporary directory and reused by the next run
 * while its seed is the same and less than a day old.
 */
import { PGlite } from "@electric-sql/pglite"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { issueKeys, KEYS, provisionAccount, startGateway } from "./Gateway.js"
import * as Load from "./Load.js"
import * as MessageSeed from "./MessageSeed.js"
import * as Mixes from "./Mixes.js"
import { stop } from "./Processes.js"
import type { Row } from "./Report.js"

export interface EmbeddedOptions {
  readonly messages: number
  readonly chats: number
  readonly connections: ReadonlyArray<number>
  readonly warmupMs: number
  readonly durationMs: number
  /** The baseline's first-page rows of this run, for the ratio. */
  readonly baseline: ReadonlyArray<Row>
}

const seedData = (dataDir: string, plan: MessageSeed.SeedPlan) =>
  Effect.promise(async () => {
    const db = await PGlite.create(join(dataDir, "pg"))
    try {
      const { rows } = await db.query<{ name: string; definition: string }>(MessageSeed.INDEX_QUERY)
      for (const statement of MessageSeed.statements(plan, rows)) await db.exec(statement)
      const { rows: [range] } = await db.query<{ min: string; max: string }>(
        `SELECT min(id)::text AS min, max(id)::text AS max FROM messages WHERE account_id = ${plan.accountId}`
      )
      return { minId: Number(range.min), maxId: Number(range.max) }
    } finally {
      await db.close()
    }
  })

interface EmbeddedSeed {
  readonly accountId: number
  readonly numbers: ReadonlyArray<{ readonly id: number; readonly phone: string }>
  readonly minId: number
  readonly maxId: number
  readonly messages: number
  readonly chats: number
  readonly seededAt: number
}

const MAX_AGE_MS = 24 * 3_600_000

/** The seed kept in `dataDir` by an earlier run, if it is the same and recent (see BenchDatabase). */
const keptSeed = (dataDir: string, options: EmbeddedOptions): EmbeddedSeed | undefined => {
  try {
    const seed = JSON.parse(readFileSync(join(dataDir, "bench-seed.json"), "utf8")) as EmbeddedSeed
    return seed.messages === options.messages && seed.chats === options.chats &&
        Date.now() - seed.seededAt < MAX_AGE_MS
      ? seed
      : undefined
  } catch {
    return undefined
  }
}

export const run = (options: EmbeddedOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const dataDir = join(tmpdir(), `wagate-bench-embedded-${options.messages}`)
    let seed = keptSeed(dataDir, options)
    if (seed === undefined) {
      rmSync(dataDir, { recursive: true, force: true })
      mkdirSync(dataDir, { recursive: true })
      const first = yield* startGateway("gateway (embedded)", { DATA_DIR: dataDir })
      const account = yield* provisionAccount(first.url)
      yield* stop(first.child)

      const began = performance.now()
      const plan = {
        accountId: account.accountId,
        numberIds: account.numbers.map((n) => n.id),
        messages: options.messages,
        chats: options.chats,
        days: 364
      }
      const range = yield* seedData(dataDir, plan)
      seed = {
        accountId: account.accountId,
        numbers: account.numbers,
        ...range,
        messages: options.messages,
        chats: options.chats,
        seededAt: Date.now()
      }
      writeFileSync(join(dataDir, "bench-seed.json"), JSON.stringify(seed))
      yield* Console.log(
        `embedded: seeded ${options.messages} messages in ${((performance.now() - began) / 1000).toFixed(1)} s`
      )
    } else {
      yield* Console.log(`embedded: reusing the ${options.messages} messages seeded in ${dataDir}`)
    }

    const gateway = yield* startGateway("gateway (embedded)", { DATA_DIR: dataDir })
    const keys = yield* issueKeys(gateway.url, seed.accountId, KEYS)
    const paths = Mixes.paths("first", { minId: seed.minId, maxId: seed.maxId, numbers: seed.numbers, chats: [] })
    const rows: Array<Row> = []
    for (const connections of options.connections) {
      const result = yield* Load.run({
        origin: gateway.url,
        paths,
        keys,
        connections,
        warmupMs: options.warmupMs,
        durationMs: options.durationMs
      }, gateway.child.pid)
      const load = `${connections} conns`
      const base = options.baseline.find((r) => r.load === load)?.result.perSecond
      rows.push({
        mix: "first",
        load,
        server: "gateway (embedded)",
        result,
        ratio: base === undefined ? null : result.perSecond / base
      })
    }
    return rows
  }))
