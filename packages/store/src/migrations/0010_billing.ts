import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The daily drawdown. `billing_days` holds one row per account and Almaty day once that day is
 * settled (charged in the same transaction), so a day is drawn once whatever restarts or clock
 * jumps happen, and a day missed while the gateway was down is found and settled later. A
 * number remembers why it is paused: `balance` (the drawdown's, lifted by a top-up) or
 * `operator` (by hand). A payment credits the ledger once per provider payment id.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE billing_days (
      account_id bigint NOT NULL REFERENCES accounts (id),
      day date NOT NULL,
      charged bigint NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, day)
    )`
  yield* sql`ALTER TABLE numbers ADD COLUMN pause_reason text`
  yield* sql`UPDATE numbers SET pause_reason = 'operator' WHERE paused`
  yield* sql`ALTER TABLE ledger ADD COLUMN reference text`
  yield* sql`CREATE UNIQUE INDEX ledger_reference_once ON ledger (reference) WHERE reference IS NOT NULL`
  // Accounts that exist already start being drawn today, not from the day they were created.
  yield* sql`
    INSERT INTO billing_days (account_id, day, charged)
    SELECT id, ((now() AT TIME ZONE 'UTC') + interval '5 hours')::date - 1, 0 FROM accounts`
})
