/**
 * The process dies (SIGKILL) after a send is recorded with its Idempotency-Key and before its
 * answer goes out: after a restart, retries with the key get the original answer (the message's
 * id), never "still in progress" and never a second message.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import pg from "pg"
import { eventually, provision } from "../support/Fixtures.js"
import { exited, send, setup, startGateway } from "./support/GatewayProcess.js"

describe("a crash between recording a send and answering it", () => {
  it.scopedLive("retries with the Idempotency-Key after the restart get the original answer", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const first = yield* startGateway(context.env, "test/e2e/support/HookedGateway.ts")
      const acme = yield* provision(context.ops)
      const numberKey = acme.numberKeys[0]!
      const key = { "idempotency-key": "order-7731" }

      // The hook kills the process once the send is recorded: the client gets no answer.
      const lost = yield* send(context.url, numberKey, "crash", key)
      assert.strictEqual(lost.status, 0, JSON.stringify(lost.body))
      yield* exited(first.child)
      assert.strictEqual(first.child.signalCode, "SIGKILL")

      const db = new pg.Client({ connectionString: context.databaseUrl })
      yield* Effect.acquireRelease(Effect.promise(() => db.connect()), () => Effect.promise(() => db.end()))
      const stored = () => db.query(`SELECT id FROM messages WHERE text = 'crash'`).then((r) => r.rows.map((row) => Number(row.id)))
      const [messageId] = yield* Effect.promise(stored)
      assert.isDefined(messageId, "the send was recorded before the crash")

      yield* startGateway(context.env)
      for (let i = 0; i < 3; i++) {
        const retry = yield* send(context.url, numberKey, "crash", key)
        assert.strictEqual(retry.status, 200, JSON.stringify(retry.body))
        assert.strictEqual(retry.body.id, messageId)
        assert.strictEqual(retry.headers.get("idempotent-replayed"), "true")
      }
      assert.deepStrictEqual(yield* Effect.promise(stored), [messageId])
      // The restarted number hands the recorded message to the network once.
      yield* eventually(
        Effect.promise(() => db.query(`SELECT status FROM messages WHERE id = $1`, [messageId]).then((r) => r.rows[0].status as string)),
        (status) => status !== "pending",
        30_000
      )
    }), { timeout: 240_000 })
})
