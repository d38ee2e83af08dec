/**
 * A restart of a gateway with linked numbers: the stop says when it begins and ends, each start says
 * which migrations it ran (all on a new database, none after), and the start logs no warning for
 * what is expected at every start: the cluster reads each number's keep-alive request before the
 * Number entity type has registered (the embedded database's single runner has its shards at
 * once), and retries it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { eventually, provision } from "../support/Fixtures.js"
import { setup, startGateway, terminate } from "./support/GatewayProcess.js"

describe("a restart with linked numbers", () => {
  it.scopedLive("logs no warning about entities not yet registered", () =>
    Effect.gen(function*() {
      const { env: { DATABASE_URL: _, RUNNER_HOST: __, RUNNER_LISTEN_HOST: ___, RUNNER_PORT: ____, ...embedded }, ops } = yield* setup
      const first = yield* startGateway(embedded)
      // A new database: every migration ran, and the start says which and how long they took.
      assert.match(first.output(), /database migrated to (\d{4}_\w+): ran \d+ migrations, 0001_initial to \1 in \d+ ms/)
      yield* provision(ops, { numbers: 3 })
      assert.strictEqual((yield* terminate(first)).code, 0, first.output())
      // A graceful stop says when it begins and when it is over.
      assert.include(first.output(), "stopping on SIGTERM: finishing requests, handing shards over")
      assert.match(first.output(), /stopped\s*$/)

      const second = yield* startGateway(embedded)
      assert.match(second.output(), /database schema current at \d{4}_\w+: no migration to run/)
      assert.notInclude(second.output(), "database migrated")
      yield* eventually(Effect.sync(second.output), (o) => o.includes("woke 3 numbers"), 60_000)
      assert.notInclude(second.output(), "Could not find entity manager")
    }), { timeout: 300_000 })
})
