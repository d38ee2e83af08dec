/**
 * A database that refuses on the test's word: `refused()` in SQL raises the SQLSTATE the test
 * chose (`refuseWith`), or returns true when none is chosen (`accept`). Tests call it from a
 * trigger (writes) or from a view standing in for a table (reads; the gateway connects as a
 * superuser, whom row security lets through).
 */
import * as Effect from "effect/Effect"
import { type DatabaseContext, sql } from "./TestGateway.js"

export const install = (database: DatabaseContext) =>
  Effect.gen(function*() {
    yield* sql(database, (sql) =>
      Effect.all([
        sql`CREATE TABLE refusal (code text NOT NULL)`,
        sql`
          CREATE FUNCTION refused() RETURNS boolean AS $$
          DECLARE wanted text;
          BEGIN
            SELECT code INTO wanted FROM refusal LIMIT 1;
            IF wanted IS NOT NULL THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = wanted; END IF;
            RETURN true;
          END $$ LANGUAGE plpgsql`
      ], { discard: true }))
    return {
      refuseWith: (sqlstate: string) =>
        sql(database, (sql) => Effect.zipRight(sql`DELETE FROM refusal`, sql`INSERT INTO refusal VALUES (${sqlstate})`)),
      accept: sql(database, (sql) => sql`DELETE FROM refusal`)
    }
  })
