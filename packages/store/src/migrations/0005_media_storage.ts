import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Storage accounting: `media_usage` keeps the running totals of the files kept per account,
 * number and kind. Statement-level triggers on `media_files` move them in the same transaction
 * as every insert, deletion (`deleted_at` set) or removal of file rows, whichever code writes
 * them, so GET /storage reads a few rows instead of summing every file.
 *
 * A file's `created_at` is its message's time (what POST /media/delete and retention filter on);
 * `chat_id` is its message's chat (the chat filter and the per-chat daily allowance). A deleted
 * file keeps its blob as the backup copy until `purge_after`; `purged_at` says it is gone.
 * `storage_policies` holds what an account chose to keep.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE media_files ADD COLUMN chat_id text`
  yield* sql`ALTER TABLE media_files ADD COLUMN purged_at timestamptz`
  yield* sql`UPDATE media_files f SET chat_id = m.chat_id FROM messages m WHERE m.id = f.message_id`
  yield* sql`CREATE INDEX media_files_account_time ON media_files (account_id, created_at, id) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX media_files_chat_day ON media_files (number_id, chat_id, created_at)`

  yield* sql`
    CREATE TABLE media_usage (
      account_id bigint NOT NULL REFERENCES accounts (id),
      number_id bigint NOT NULL REFERENCES numbers (id),
      kind text NOT NULL,
      bytes bigint NOT NULL DEFAULT 0,
      files bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (account_id, number_id, kind)
    )`
  yield* sql`
    INSERT INTO media_usage (account_id, number_id, kind, bytes, files)
    SELECT account_id, number_id, kind, sum(size), count(*) FROM media_files WHERE deleted_at IS NULL
    GROUP BY account_id, number_id, kind`

  // One function for the three events: each row counts its size while it is live (not deleted).
  yield* sql.unsafe(`
    CREATE FUNCTION media_usage_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO media_usage AS u (account_id, number_id, kind, bytes, files)
        SELECT account_id, number_id, kind, sum(size), count(*) FROM new_files WHERE deleted_at IS NULL
        GROUP BY account_id, number_id, kind
        ON CONFLICT (account_id, number_id, kind)
        DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes, files = u.files + EXCLUDED.files;
      ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO media_usage AS u (account_id, number_id, kind, bytes, files)
        SELECT n.account_id, n.number_id, n.kind,
               sum((CASE WHEN n.deleted_at IS NULL THEN n.size ELSE 0 END) - (CASE WHEN o.deleted_at IS NULL THEN o.size ELSE 0 END)),
               sum((CASE WHEN n.deleted_at IS NULL THEN 1 ELSE 0 END) - (CASE WHEN o.deleted_at IS NULL THEN 1 ELSE 0 END))
        FROM old_files o JOIN new_files n ON n.id = o.id
        WHERE (o.deleted_at IS NULL) <> (n.deleted_at IS NULL) OR o.size <> n.size
        GROUP BY n.account_id, n.number_id, n.kind
        ON CONFLICT (account_id, number_id, kind)
        DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes, files = u.files + EXCLUDED.files;
      ELSE
        UPDATE media_usage u SET bytes = u.bytes - d.bytes, files = u.files - d.files
        FROM (SELECT account_id, number_id, kind, sum(size) AS bytes, count(*) AS files FROM old_files
              WHERE deleted_at IS NULL GROUP BY account_id, number_id, kind) d
        WHERE u.account_id = d.account_id AND u.number_id = d.number_id AND u.kind = d.kind;
      END IF;
      RETURN NULL;
    END $$`)
  yield* sql.unsafe(`
    CREATE TRIGGER media_usage_insert AFTER INSERT ON media_files
    REFERENCING NEW TABLE AS new_files FOR EACH STATEMENT EXECUTE FUNCTION media_usage_apply()`)
  yield* sql.unsafe(`
    CREATE TRIGGER media_usage_update AFTER UPDATE ON media_files
    REFERENCING OLD TABLE AS old_files NEW TABLE AS new_files FOR EACH STATEMENT EXECUTE FUNCTION media_usage_apply()`)
  yield* sql.unsafe(`
    CREATE TRIGGER media_usage_delete AFTER DELETE ON media_files
    REFERENCING OLD TABLE AS old_files FOR EACH STATEMENT EXECUTE FUNCTION media_usage_apply()`)

  yield* sql`
    CREATE TABLE storage_policies (
      account_id bigint PRIMARY KEY REFERENCES accounts (id),
      skip_groups boolean NOT NULL DEFAULT false,
      skip_unknown boolean NOT NULL DEFAULT false,
      unknown_max_mb integer,
      chat_daily_mb integer,
      ceiling_bytes bigint,
      retention_days integer,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
