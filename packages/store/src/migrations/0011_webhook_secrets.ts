import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as SecretKeyring from "../SecretKeyring.js"

/**
 * Webhook signing secrets encrypted at rest: the clear secrets written before this migration are
 * sealed with the process's key (see docs/webhooks.md, "Secrets at rest"), and a constraint keeps
 * any clear secret from being written again.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ account_id: string; secret: string; previous_secret: string | null }>`
    SELECT account_id, secret, previous_secret FROM webhook_endpoints
    WHERE secret NOT LIKE 'enc:v1:%' OR previous_secret NOT LIKE 'enc:v1:%'
    FOR UPDATE`
  if (rows.length > 0) {
    const ring = yield* Effect.serviceOption(SecretKeyring.SecretKeyring)
    if (Option.isNone(ring)) {
      return yield* Effect.dieMessage("Migration 0011 seals the stored webhook secrets and needs the webhook secret key")
    }
    const seal = (value: string | null, accountId: string) =>
      value === null || SecretKeyring.isSealed(value)
        ? value
        : SecretKeyring.seal(ring.value, value, SecretKeyring.webhookContext(accountId))
    for (const r of rows) {
      yield* sql`
        UPDATE webhook_endpoints
        SET secret = ${seal(r.secret, r.account_id)}, previous_secret = ${seal(r.previous_secret, r.account_id)}
        WHERE account_id = ${r.account_id}`
    }
  }
  yield* sql`
    ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_secrets_sealed
    CHECK (secret LIKE 'enc:v1:%' AND (previous_secret IS NULL OR previous_secret LIKE 'enc:v1:%'))`
})
