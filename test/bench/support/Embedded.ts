/**
 * The first-page mix against the gateway on its embedded database (PGlite in DATA_DIR, one
 * connection, shared state in memory: what `npm start` runs with nothing configured). The data
 * is seeded with the same statements as on PostgreSQL, by opening the gateway's PGlite directory
 * while the gateway is stopped (PGlite allows one process).
 */
import { PGlite } from "@electric-sql/pglite"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KEYS, provisionAccount, startGateway } from "./Gateway.js"
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

const seed = (dataDir: string, plan: MessageSeed.SeedPlan) =>
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

export const run = (options: EmbeddedOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const dataDir = mkdtempSync(join(tmpdir(), "wagate-bench-embedded-"))
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
    const range = yield* seed(dataDir, plan)
    yield* Console.log(`embedded: seeded ${options.messages} messages in ${((performance.now() - began) / 1000).toFixed(1)} s`)

    const gateway = yield* startGateway("gateway (embedded)", { DATA_DIR: dataDir })
    const paths = Mixes.paths("first", { ...range, numbers: account.numbers, chats: [] })
    const rows: Array<Row> = []
    for (const connections of options.connections) {
      const result = yield* Load.run({
        origin: gateway.url,
        paths,
        keys: account.keys.slice(0, KEYS),
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
