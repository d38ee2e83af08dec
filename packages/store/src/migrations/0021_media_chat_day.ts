import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * `media_chat_day_passed(account, number, chat, since, size)`: the account's `chat_daily_mb` when
 * a file of `size` bytes would take the files kept for this chat of the number since `since` (the
 * start of the Almaty day) past it, null when the file fits; called by the statement that counts
 * an incoming file, which counts it only on null. Like `media_ceiling_passed` (0020), it locks
 * the account's policy row until the counting transaction ends, then reads the chat's bytes with
 * a snapshot of its own: files of one chat counted at once are checked one after the other, and
 * together never pass the limit. An account without the limit takes no lock.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION media_chat_day_passed(account bigint, number bigint, chat text, since timestamptz, size bigint)
    RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      daily_mb integer;
      kept bigint;
    BEGIN
      SELECT chat_daily_mb INTO daily_mb FROM storage_policies
      WHERE account_id = account AND chat_daily_mb IS NOT NULL FOR UPDATE;
      IF daily_mb IS NULL THEN
        RETURN NULL;
      END IF;
      SELECT coalesce(sum(f.size), 0) INTO kept FROM media_files f
      WHERE f.number_id = number AND f.chat_id = chat AND f.created_at >= since AND f.deleted_at IS NULL;
      RETURN CASE WHEN kept + size > daily_mb::bigint * 1048576 THEN daily_mb END;
    END $$`)
})
