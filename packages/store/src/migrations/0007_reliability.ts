import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Reliability of a number's entity:
 * - `messages.send_attempts` counts the hand-overs of an outgoing message, so re-sends after a
 *   reconnect give up on one message after a few tries instead of blocking those behind it;
 * - `numbers.fault` / `fault_at` keep the last request a number's entity dropped after it failed
 *   on it twice, for operators;
 * - `incoming_failures` keeps every incoming event whose storing failed, as the network gave it
 *   (JSON text: it may hold characters `jsonb` refuses), until a retry stores it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN send_attempts integer NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE numbers ADD COLUMN fault text`
  yield* sql`ALTER TABLE numbers ADD COLUMN fault_at timestamptz`
  yield* sql`
    CREATE TABLE incoming_failures (
      id bigserial PRIMARY KEY,
      number_id bigint NOT NULL REFERENCES numbers (id),
      event text NOT NULL,
      error text NOT NULL,
      attempts integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL DEFAULT now(),
      next_attempt_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX incoming_failures_due ON incoming_failures (number_id, next_attempt_at)`
})
