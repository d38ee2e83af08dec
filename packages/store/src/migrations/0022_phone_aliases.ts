import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A phone given in other digits than those WhatsApp knows the person by (Brazil's ninth mobile
 * digit, Mexico's 521/52): the number's chat is the one of the phone WhatsApp answered with, and
 * a later send to the digits given goes there too (docs/api-decisions.md, "The phone WhatsApp
 * knows").
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE phone_aliases (
      number_id bigint NOT NULL REFERENCES numbers (id),
      phone text NOT NULL,
      canonical text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (number_id, phone)
    )`
})
