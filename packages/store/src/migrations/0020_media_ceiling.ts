import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * `media_ceiling_passed(account, size)`: the account's storage ceiling when a file of `size`
 * bytes would take its usage past it, null when the file fits; called by the statement that
 * counts the file, which counts it only on null. It locks the account's policy row until the
 * counting transaction ends, then reads the usage with a snapshot of its own (a volatile
 * function's query sees what committed while it waited, where the calling statement's snapshot
 * would not): files counted at once are checked one after the other, and together never pass
 * the ceiling. An account without a ceiling takes no lock.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION media_ceiling_passed(account bigint, size bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      ceiling bigint;
      used bigint;
    BEGIN
      SELECT ceiling_bytes INTO ceiling FROM storage_policies
      WHERE account_id = account AND ceiling_bytes IS NOT NULL FOR UPDATE;
      IF ceiling IS NULL THEN
        RETURN NULL;
      END IF;
      SELECT coalesce(sum(bytes), 0) INTO used FROM media_usage WHERE account_id = account;
      RETURN CASE WHEN used + size > ceiling THEN ceiling END;
    END $$`)
})
